package sessions_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// bigSize is the size of the Cognee-written sessions of the big-session
// tests: 20 000 entries (about 16 MB), where one whole-list scan shows
// clearly (the old index rebuild read all 20 000 in one script);
// SIDECAR_TEST_BIG_SESSION=100000 runs them at 100 000.
func bigSize(t *testing.T) int {
	if v := os.Getenv("SIDECAR_TEST_BIG_SESSION"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("SIDECAR_TEST_BIG_SESSION=%q: want a number of entries of at least 1000", v)
		}
		return n
	}
	return 20000
}

// maxCommandElements bounds the list elements any one command reads:
// the longest answer (last_n=1000) and two index steps (256 each: a step
// of the index, then a trim or a renumbering in the same script).
const maxCommandElements = sessions.MaxLastN + 24

// bigEntry is a Q&A entry as Cognee's create writes it: its own time (µs
// apart), an answer of about 700 bytes, the word of the question.
func bigEntry(qa string, at time.Time, word string) string {
	return fmt.Sprintf(`{"time": %q, "question": "what about %s %s?", "context": "", "answer": %q, "qa_id": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`,
		at.UTC().Format("2006-01-02T15:04:05.000000"), qa, word, strings.Repeat("lorem ipsum ", 58), qa)
}

// cogneeList is Cognee's side of one session: its writes with redis-py's
// commands (RPUSH then EXPIRE; a delete reads all, DEL, RPUSH the rest).
type cogneeList struct {
	t     *testing.T
	c     rueidis.Client
	key   string
	clock time.Time
}

func (g *cogneeList) entry(qa, word string) string {
	g.clock = g.clock.Add(time.Microsecond)
	return bigEntry(qa, g.clock, word)
}

func (g *cogneeList) push(vals ...string) {
	g.t.Helper()
	for i := 0; i < len(vals); i += 1000 {
		rpush(g.t, g.c, g.key, vals[i:min(i+1000, len(vals))]...)
	}
	if err := g.c.Do(g.t.Context(), g.c.B().Expire().Key(g.key).Seconds(604800).Build()).Error(); err != nil {
		g.t.Fatal(err)
	}
}

// rewrite is Cognee's delete of the elements whose id drop accepts.
func (g *cogneeList) rewrite(drop func(el string) bool) {
	g.t.Helper()
	all := lrange(g.t, g.c, g.key)
	all = slices.DeleteFunc(all, drop)
	g.c.Do(g.t.Context(), g.c.B().Del().Key(g.key).Build())
	g.push(all...)
}

func hasID(field string, ids ...string) func(string) bool {
	return func(el string) bool {
		for _, id := range ids {
			if strings.Contains(el, fmt.Sprintf(`"%s": %q`, field, id)) {
				return true
			}
		}
		return false
	}
}

var stepsRE = regexp.MustCompile(`sidecar_session_index_steps_total\{index="(\w+)"\} (\d+)`)

func indexSteps(t *testing.T, h *sidecartest.Host, which string) int {
	t.Helper()
	for _, m := range stepsRE.FindAllStringSubmatch(h.Metrics(t), -1) {
		if m[1] == which {
			n, _ := strconv.Atoi(m[2])
			return n
		}
	}
	t.Fatalf("no sidecar_session_index_steps_total{index=%q}", which)
	return 0
}

// A Cognee-written session of 20 000 entries and 20 000 context entries,
// with Cognee's RPUSHes and rewrites (one of them the delete-then-recreate
// that keeps the length and the last qa_id) between the sidecar's appends,
// feedback, reads, deletes and context calls: every answer is right, and
// Redis's own record (MONITOR) shows that no command read more than
// maxCommandElements elements or ran a whole-key command, while a rewrite
// made the index again in many small steps and an append by Cognee cost
// no step at all.
func TestBigCogneeSessionBoundedWork(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	n := bigSize(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	qa := &cogneeList{t: t, c: c, key: keys.Entries, clock: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	cx := &cogneeList{t: t, c: c, key: keys.Context}

	ids := make([]string, n)
	els := make([]string, n)
	ctxIDs := make([]string, n)
	ctxEls := make([]string, n)
	for i := range n {
		ids[i] = "k" + strconv.Itoa(i)
		els[i] = qa.entry(ids[i], "plain")
		ctxIDs[i] = "x" + strconv.Itoa(i)
		ctxEls[i] = fmt.Sprintf(`{"id": %q, "text": "context %d", "tags": []}`, ctxIDs[i], i)
	}
	qa.push(els...)
	cx.push(ctxEls...)
	els, ctxEls = nil, nil

	mon := newMonitor(t, srv)
	// call makes one API call and checks the status and the work of every
	// command it made Redis run.
	call := func(method, path, body string, want int) (sidecartest.Reply, []command) {
		t.Helper()
		mon.mark() // Cognee's writes since the last call
		r := h.Do(t, method, base+path, body)
		cmds := mon.mark()
		if r.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
		}
		most, which, unbounded := maxWork(cmds)
		if unbounded != "" {
			t.Fatalf("%s %s ran %s: work that grows with the session", method, path, unbounded)
		}
		if most > maxCommandElements {
			t.Fatalf("%s %s: one %s read %d list elements, want at most %d", method, path, which, most, maxCommandElements)
		}
		return r, cmds
	}
	remove := func(list []string, id string) []string {
		return slices.DeleteFunc(list, func(s string) bool { return s == id })
	}

	// The first lookup makes the index, a step at a time.
	before := indexSteps(t, h, "qa")
	_, cmds := call("GET", "/entries/k"+strconv.Itoa(n/2), "", 200)
	if steps := indexSteps(t, h, "qa") - before; steps < n/512 || scripts(cmds) < n/512 {
		t.Fatalf("indexing %d entries took %d steps in %d scripts, want many small ones", n, steps, scripts(cmds))
	}
	call("PUT", "/entries/k5/feedback", `{"feedback_score":5}`, 200)
	call("POST", "/entries", `{"qa_id":"s1","question":"q","answer":"a"}`, 201)
	ids = append(ids, "s1")

	// Cognee appends: the sidecar indexes just that tail, in the script
	// (the search index's catch-up of Cognee's entries runs in the
	// background, in bounded steps that maxWork checks too).
	qa.push(qa.entry("c1", "needle"))
	ids = append(ids, "c1")
	before = indexSteps(t, h, "qa")
	if _, cmds := call("POST", "/entries", `{"qa_id":"s2","question":"q","answer":"a"}`, 201); runs(cmds, sessions.SessionAppend) != 1 || runs(cmds, sessions.SessionIndexBuild) != 0 {
		t.Fatalf("an append after Cognee's RPUSH ran session_append %d times and %d index steps, want 1 and 0", runs(cmds, sessions.SessionAppend), runs(cmds, sessions.SessionIndexBuild))
	}
	ids = append(ids, "s2")
	call("POST", "/entries", `{"qa_id":"c1","question":"retry","answer":"retry"}`, 200)
	if steps := indexSteps(t, h, "qa") - before; steps != 0 {
		t.Fatalf("Cognee's append cost %d index steps, want 0", steps)
	}

	// Cognee deletes k0: the next call makes the index again, in steps.
	qa.rewrite(hasID("qa_id", "k0"))
	ids = remove(ids, "k0")
	call("PUT", "/entries/k7/feedback", `{"feedback_score":2}`, 200)
	call("GET", "/entries/k0", "", 404)

	// Cognee deletes k9 and s2, then creates y and s2 again: same length,
	// same last qa_id. y is found, and a retried append of y stores nothing.
	qa.rewrite(hasID("qa_id", "k9", "s2"))
	qa.push(qa.entry("y", "plain"), qa.entry("s2", "plain"))
	ids = append(remove(remove(ids, "k9"), "s2"), "y", "s2")
	call("GET", "/entries/y", "", 200)
	call("POST", "/entries", `{"qa_id":"y","question":"retry","answer":"retry"}`, 200)
	call("POST", "/entries", `{"qa_id":"s3","question":"q","answer":"a"}`, 201)
	ids = append(ids, "s3")

	// The sidecar deletes in the middle, then the newest.
	mid := "k" + strconv.Itoa(n/2)
	call("DELETE", "/entries/"+mid, "", 204)
	ids = remove(ids, mid)
	call("GET", "/entries/"+mid, "", 404)
	call("GET", "/entries/k"+strconv.Itoa(n/2+1), "", 200)
	call("DELETE", "/entries/s3", "", 204)
	ids = remove(ids, "s3")
	call("PUT", "/entries/y/feedback", `{"feedback_score":4}`, 200)

	// Reads are bounded too, and right.
	r, _ := call("GET", "/entries?last_n=50", "", 200)
	if got, want := strings.Join(qaIDs(t, r.Body), ","), strings.Join(ids[len(ids)-50:], ","); got != want {
		t.Fatalf("last_n=50 is %s, want %s", got, want)
	}
	r, _ = call("GET", "/search?q=needle", "", 200)
	if got := qaIDs(t, r.Body); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("search for needle found %v, want [c1]", got)
	}

	// Context entries: the same index, the same bounds.
	call("POST", "/context", `{"id":"xnew","text":"new"}`, 201)
	ctxIDs = append(ctxIDs, "xnew")
	call("POST", "/context", `{"id":"x5","text":"again"}`, 200)
	call("PATCH", "/context/x"+strconv.Itoa(n-1), `{"text":"changed"}`, 200)
	call("DELETE", "/context/x"+strconv.Itoa(n/3), "", 204)
	ctxIDs = remove(ctxIDs, "x"+strconv.Itoa(n/3))
	cx.rewrite(hasID("id", "x0"))
	ctxIDs = remove(ctxIDs, "x0")
	call("PATCH", "/context/x1", `{"text":"changed"}`, 200)
	call("DELETE", "/context/x0", "", 404)
	cx.push(`{"id": "x0", "text": "back"}`)
	ctxIDs = append(ctxIDs, "x0")
	call("POST", "/context", `{"id":"x0","text":"retry"}`, 200)
	r, _ = call("GET", "/context", "", 200)
	var listed []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.Body), &listed); err != nil || len(listed) != sessions.MaxListElements ||
		listed[0].ID != ctxIDs[0] || r.Header.Get(sidecar.TruncatedHeader) != "true" {
		t.Fatalf("GET /context: %d elements (%v), first %+v, %s %q; want the oldest %d, cut", len(listed), err, listed[:min(1, len(listed))], sidecar.TruncatedHeader, r.Header.Get(sidecar.TruncatedHeader), sessions.MaxListElements)
	}

	// What Redis holds is what the calls said.
	if got := listIDs(t, lrange(t, c, keys.Entries), "qa_id"); !slices.Equal(got, ids) {
		t.Fatalf("the entries list holds %d ids, want %d (first difference at %d)", len(got), len(ids), firstDiff(got, ids))
	}
	if got := listIDs(t, lrange(t, c, keys.Context), "id"); !slices.Equal(got, ctxIDs) {
		t.Fatalf("the context list holds %d ids, want %d (first difference at %d)", len(got), len(ctxIDs), firstDiff(got, ctxIDs))
	}
	for _, k := range []string{keys.Index, redisstore.Layout{}.Session("u1", "s1").ContextIndex} {
		if ttl := ttlOf(t, c, k); ttl <= 0 {
			t.Fatalf("%s has TTL %d, want the session's", k, ttl)
		}
	}
}

func listIDs(t *testing.T, els []string, field string) []string {
	t.Helper()
	out := make([]string, len(els))
	for i, el := range els {
		var m map[string]any
		if err := json.Unmarshal([]byte(el), &m); err != nil {
			t.Fatalf("element %d: %v", i, err)
		}
		out[i], _ = m[field].(string)
	}
	return out
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
