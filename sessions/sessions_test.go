package sessions_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

const base = "/v1/users/u1/sessions/s1"

var keys = redisstore.Layout{}.Session("u1", "s1")

// ownKeys are the session's keys that every write creates or slides (the
// usage ids hash exists only once usage was posted).
func ownKeys(k redisstore.SessionKeys) []string {
	return []string{k.Entries, k.Traces, k.Context, k.Record, k.Index}
}

func start(t *testing.T, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, sessions.Factory, ttl.Factory)
}

// entry is a Q&A entry as clients read it: the Go client's type, so these
// tests also hold the published type to what the server answers.
type entry = client.SessionQAEntry

func lrange(t *testing.T, c rueidis.Client, key string) []string {
	t.Helper()
	v, err := c.Do(t.Context(), c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func rpush(t *testing.T, c rueidis.Client, key string, vals ...string) {
	t.Helper()
	if err := c.Do(t.Context(), c.B().Rpush().Key(key).Element(vals...).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

func ttlOf(t *testing.T, c rueidis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../cognee/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEntryLifecycle(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		// the tombstone: what every write recorded; the search index written
		// as the entries are, for what a delete leaves of it
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always", "SEARCH_INDEX": "eager"})
		c := srv.Client(t)

		r := h.Do(t, "POST", base+"/entries", `{"question":"Where is the dog?","answer":"In the garden","qa_id":"q1","context":"ctx"}`)
		if r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		var e entry
		r.JSON(t, &e)
		if e.QAID != "q1" || e.Question != "Where is the dog?" || !strings.HasSuffix(e.Time, "+00:00") || e.FeedbackScore != nil {
			t.Fatalf("stored entry %+v", e)
		}
		stored := lrange(t, c, keys.Entries)
		if len(stored) != 1 || stored[0] != strings.TrimSpace(r.Body) {
			t.Fatalf("Redis holds %q, want the returned entry %q", stored, r.Body)
		}

		// A retried append returns the stored entry and stores nothing.
		r2 := h.Do(t, "POST", base+"/entries", `{"question":"different","answer":"x","qa_id":"q1"}`)
		if r2.Status != 200 || r2.Body != r.Body {
			t.Fatalf("retried append: %d %s, want 200 and the first entry", r2.Status, r2.Body)
		}
		if n := len(lrange(t, c, keys.Entries)); n != 1 {
			t.Fatalf("%d entries after a retried append, want 1", n)
		}

		// A second entry with a generated qa_id.
		r = h.Do(t, "POST", base+"/entries", `{"question":"And the cat?","answer":"On the roof"}`)
		var e2 entry
		r.JSON(t, &e2)
		if r.Status != 201 || len(e2.QAID) != 36 {
			t.Fatalf("append without qa_id: %d %s", r.Status, r.Body)
		}

		var list []entry
		h.Do(t, "GET", base+"/entries?last_n=1", "").JSON(t, &list)
		if len(list) != 1 || list[0].QAID != e2.QAID {
			t.Fatalf("last_n=1: %+v", list)
		}
		h.Do(t, "GET", base+"/entries", "").JSON(t, &list)
		if len(list) != 2 || list[0].QAID != "q1" || list[1].QAID != e2.QAID {
			t.Fatalf("entries oldest first: %+v", list)
		}

		if r := h.Do(t, "GET", base+"/entries/q1", ""); r.Status != 200 || !strings.Contains(r.Body, `"qa_id": "q1"`) {
			t.Fatalf("get q1: %d %s", r.Status, r.Body)
		}

		// PATCH merges memify_metadata key-wise and leaves absent fields alone.
		h.Do(t, "PATCH", base+"/entries/q1", `{"memify_metadata":{"a":true}}`)
		r = h.Do(t, "PATCH", base+"/entries/q1", `{"memify_metadata":{"b":false},"answer":"Under the tree"}`)
		r.JSON(t, &e)
		if r.Status != 200 || e.Answer != "Under the tree" || e.Question != "Where is the dog?" ||
			e.MemifyMetadata["a"] != true || e.MemifyMetadata["b"] != false {
			t.Fatalf("patch: %d %s", r.Status, r.Body)
		}

		r = h.Do(t, "PUT", base+"/entries/q1/feedback", `{"feedback_score":5,"feedback_text":"spot on"}`)
		r.JSON(t, &e)
		if r.Status != 200 || *e.FeedbackScore != 5 || *e.FeedbackText != "spot on" || e.Answer != "Under the tree" {
			t.Fatalf("feedback: %d %s", r.Status, r.Body)
		}
		r = h.Do(t, "DELETE", base+"/entries/q1/feedback", "")
		r.JSON(t, &e)
		if r.Status != 200 || e.FeedbackScore != nil || e.FeedbackText != nil || e.MemifyMetadata["a"] != true {
			t.Fatalf("clear feedback: %d %s", r.Status, r.Body)
		}

		var hits []entry
		h.Do(t, "GET", base+"/search?q=TREE+dog", "").JSON(t, &hits)
		if len(hits) != 1 || hits[0].QAID != "q1" {
			t.Fatalf("search: %+v", hits)
		}
		h.Do(t, "GET", base+"/search?q=the", "").JSON(t, &hits)
		if len(hits) != 2 || hits[0].QAID != e2.QAID {
			t.Fatalf("search newest first: %+v", hits)
		}

		if r := h.Do(t, "DELETE", base+"/entries/q1", ""); r.Status != 204 {
			t.Fatalf("delete entry: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "DELETE", base+"/entries/q1", ""); r.Status != 404 || r.Code() != "not_found" {
			t.Fatalf("delete again: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "GET", base+"/entries/q1", ""); r.Status != 404 {
			t.Fatalf("get deleted: %d", r.Status)
		}
		// The index follows the removal: the other entry is still found.
		if r := h.Do(t, "PUT", base+"/entries/"+e2.QAID+"/feedback", `{"feedback_score":1}`); r.Status != 200 {
			t.Fatalf("feedback after a delete: %d %s", r.Status, r.Body)
		}

		for _, k := range []string{srv.Layout().SearchEntryDocs("u1", "s1"), srv.Layout().SearchSessions("u1")} {
			if n, _ := c.Do(t.Context(), c.B().Exists().Key(k).Build()).AsInt64(); n != 1 {
				t.Fatalf("%s before the delete: exists %d, want the entry indexed", k, n)
			}
		}
		if r := h.Do(t, "DELETE", base, ""); r.Status != 204 {
			t.Fatalf("delete session: %d", r.Status)
		}
		// Only the event stream's tombstone is left, its one `deleted`
		// event expiring within 300 s, and the user's on-demand search
		// marker when there is one (shared by the user's sessions: the
		// user's marker and the build's cursor): the
		// session's search documents go with it, and the user's sessions
		// list (empty then) with its last member.
		rc := srv.Client(t)
		left := srv.Keys(t, "*")
		left = slices.DeleteFunc(left, func(k string) bool {
			return strings.HasPrefix(k, "agent_search_stats:") || strings.HasPrefix(k, "agent_user_marker:")
		})
		if len(left) != 1 {
			t.Fatalf("keys left after deleting the session: %q, want 1 (the events tombstone)", left)
		}
		ev := srv.Layout().SessionEvents("u1", "s1")
		if got, err := rc.Do(t.Context(), rc.B().Xlen().Key(ev).Build()).AsInt64(); err != nil || got != 1 {
			t.Fatalf("XLEN %s = %d, %v; want 1", ev, got, err)
		}
		if ttl, err := rc.Do(t.Context(), rc.B().Ttl().Key(ev).Build()).AsInt64(); err != nil || ttl <= 0 || ttl > 300 {
			t.Fatalf("TTL %s = %d, %v; want 1..300", ev, ttl, err)
		}
		if r := h.Do(t, "DELETE", base, ""); r.Status != 404 {
			t.Fatalf("delete missing session: %d", r.Status)
		}
		if r := h.Do(t, "GET", "/v1/users/u1/sessions/nope/entries", ""); r.Status != 200 || strings.TrimSpace(r.Body) != "[]" {
			t.Fatalf("unknown session list: %d %s, want []", r.Status, r.Body)
		}
	})
}

func TestTracesAndContext(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		for i := range 3 {
			r := h.Do(t, "POST", base+"/traces", fmt.Sprintf(`{"origin_function":"step%d","status":"ok","method_params":{"i":%d}}`, i, i))
			if r.Status != 201 {
				t.Fatalf("trace: %d %s", r.Status, r.Body)
			}
		}
		var traces []map[string]any
		h.Do(t, "GET", base+"/traces?last_n=2", "").JSON(t, &traces)
		if len(traces) != 2 || traces[0]["origin_function"] != "step1" || traces[1]["origin_function"] != "step2" {
			t.Fatalf("traces: %+v", traces)
		}
		if r := h.Do(t, "POST", base+"/traces", `{"status":"ok"}`); r.Status != 400 {
			t.Fatalf("trace without origin_function: %d", r.Status)
		}

		r := h.Do(t, "POST", base+"/context", `{"id":"c1","text":"metric units","tags":[]}`)
		if r.Status != 201 || strings.TrimSpace(r.Body) != `{"id": "c1", "text": "metric units", "tags": []}` {
			t.Fatalf("context: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", base+"/context", `{"id":"c1","text":"other"}`); r.Status != 200 || !strings.Contains(r.Body, "metric units") {
			t.Fatalf("context retry: %d %s", r.Status, r.Body)
		}
		r = h.Do(t, "PATCH", base+"/context/c1", `{"text":"imperial units","score":0.5}`)
		if r.Status != 200 || strings.TrimSpace(r.Body) != `{"id": "c1", "text": "imperial units", "tags": [], "score": 0.5}` {
			t.Fatalf("context patch: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "PATCH", base+"/context/c1", `{"id":"c2"}`); r.Status != 400 {
			t.Fatalf("patch changing id: %d", r.Status)
		}
		if r := h.Do(t, "PATCH", base+"/context/zz", `{"a":1}`); r.Status != 404 {
			t.Fatalf("patch missing context: %d", r.Status)
		}
		if got := lrange(t, c, keys.Context); len(got) != 1 || got[0] != `{"id": "c1", "text": "imperial units", "tags": [], "score": 0.5}` {
			t.Fatalf("Redis context list %q", got)
		}
		// A nested "id" is not the entry's id.
		h.Do(t, "POST", base+"/context", `{"meta":{"id":"inner"},"id":"outer"}`)
		if r := h.Do(t, "PATCH", base+"/context/inner", `{"x":1}`); r.Status != 404 {
			t.Fatalf("patch by a nested id: %d %s, want 404", r.Status, r.Body)
		}
		if r := h.Do(t, "PATCH", base+"/context/outer", `{"x":1}`); r.Status != 200 || !strings.Contains(r.Body, `"meta": {"id": "inner"}, "id": "outer", "x": 1`) {
			t.Fatalf("patch outer: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "DELETE", base+"/context/c1", ""); r.Status != 204 {
			t.Fatalf("context delete: %d", r.Status)
		}
		if r := h.Do(t, "DELETE", base+"/context/c1", ""); r.Status != 404 {
			t.Fatalf("context delete again: %d", r.Status)
		}
	})
}

// Cognee's entries (written by its adapter, not by us) read back, and an
// update changes the bytes of the updated fields only.
func TestCogneeWrittenEntries(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		cur, old := fixture(t, "cognee_qa_entry.json"), fixture(t, "cognee_qa_entry_old.json")
		trace := fixture(t, "cognee_trace.json")
		rpush(t, c, keys.Entries, old, cur)
		rpush(t, c, keys.Traces, trace)

		var list []entry
		h.Do(t, "GET", base+"/entries", "").JSON(t, &list)
		if len(list) != 2 || list[1].Question != "Qu'est-ce que ça coûte ? 😀 </script>" || list[1].Context != "line1\nline2\t\"quoted\" \\ back/slash" {
			t.Fatalf("Cognee entries read as %+v", list)
		}
		var traces []map[string]any
		r := h.Do(t, "GET", base+"/traces", "")
		r.JSON(t, &traces)
		if len(traces) != 1 || traces[0]["method_return_value"] != nil {
			t.Fatalf("Cognee trace with NaN read as %s", r.Body)
		}

		id := "7f3c2a1e-5b7d-4c3e-9a41-0d2f6b8e1c55"
		if r := h.Do(t, "PUT", base+"/entries/"+id+"/feedback", `{"feedback_text":"très bien","feedback_score":4}`); r.Status != 200 {
			t.Fatalf("feedback: %d %s", r.Status, r.Body)
		}
		want := strings.Replace(cur, `"feedback_text": null, "feedback_score": null`, `"feedback_text": "tr\u00e8s bien", "feedback_score": 4`, 1)
		if got := lrange(t, c, keys.Entries); got[1] != want || got[0] != old {
			t.Fatalf("stored after feedback:\n got %s\nwant %s", got[1], want)
		}

		// memify_metadata merges key-wise; the detail object keeps its bytes.
		h.Do(t, "PATCH", base+"/entries/"+id, `{"memify_metadata":{"feedback_weights_applied":true,"session_persisted":true}}`)
		want = strings.Replace(want, `"feedback_weights_applied": false`, `"feedback_weights_applied": true`, 1)
		want = strings.Replace(want, `"weight": 0.30000000000000004}}`, `"weight": 0.30000000000000004}, "session_persisted": true}`, 1)
		if got := lrange(t, c, keys.Entries)[1]; got != want {
			t.Fatalf("stored after memify merge:\n got %s\nwant %s", got, want)
		}

		// An entry written by an older Cognee without the newer fields gets
		// the field appended.
		oldID := "0b6a9a3e-1111-4222-8333-944445555666"
		if r := h.Do(t, "PATCH", base+"/entries/"+oldID, `{"used_session_context_ids":["c9"]}`); r.Status != 200 {
			t.Fatalf("patch old entry: %d %s", r.Status, r.Body)
		}
		wantOld := strings.TrimSuffix(old, "}") + `, "used_session_context_ids": ["c9"]}`
		if got := lrange(t, c, keys.Entries)[0]; got != wantOld {
			t.Fatalf("old entry:\n got %s\nwant %s", got, wantOld)
		}
	})
}

// cogneeDelete is Cognee's delete_qa_entry: read all, drop one, DEL, RPUSH
// the survivors.
func cogneeDelete(t *testing.T, c rueidis.Client, key string, index int) {
	t.Helper()
	all := lrange(t, c, key)
	all = append(all[:index], all[index+1:]...)
	c.Do(t.Context(), c.B().Del().Key(key).Build())
	rpush(t, c, key, all...)
}

// The qa_id index may go stale when Cognee rewrites the list, but it is
// checked on every use, so the sidecar never touches the wrong entry.
func TestIndexSurvivesCogneeRewrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		for i := range 5 {
			h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"question":"q%d","answer":"a%d","qa_id":"e%d"}`, i, i, i))
		}
		cogneeDelete(t, c, keys.Entries, 1) // e1 gone: e2..e4 move up
		r := h.Do(t, "PUT", base+"/entries/e3/feedback", `{"feedback_score":3}`)
		var e entry
		r.JSON(t, &e)
		if r.Status != 200 || e.QAID != "e3" || e.Question != "q3" {
			t.Fatalf("feedback after Cognee's delete hit %s", r.Body)
		}
		got := lrange(t, c, keys.Entries)
		for i, el := range got {
			if strings.Contains(el, `"feedback_score": 3`) != strings.Contains(el, `"qa_id": "e3"`) {
				t.Fatalf("element %d wrongly updated: %s", i, el)
			}
		}
		if r := h.Do(t, "GET", base+"/entries/e1", ""); r.Status != 404 {
			t.Fatalf("entry Cognee deleted: %d", r.Status)
		}

		// Cognee appends directly: found by qa_id, and a retried append with
		// that qa_id is recognised.
		cogneeEntry := strings.Replace(fixture(t, "cognee_qa_entry.json"), "7f3c2a1e-5b7d-4c3e-9a41-0d2f6b8e1c55", "cg1", 1)
		rpush(t, c, keys.Entries, cogneeEntry)
		if r := h.Do(t, "GET", base+"/entries/cg1", ""); r.Status != 200 {
			t.Fatalf("Cognee's own append not found: %d", r.Status)
		}
		if r := h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"cg1"}`); r.Status != 200 {
			t.Fatalf("append of a qa_id Cognee wrote: %d, want 200 (already there)", r.Status)
		}
		if n := len(lrange(t, c, keys.Entries)); n != 5 {
			t.Fatalf("%d entries, want 5", n)
		}
		// Cognee's LSET (feedback) keeps positions; still found.
		if r := h.Do(t, "DELETE", base+"/entries/e4", ""); r.Status != 204 {
			t.Fatalf("delete e4: %d", r.Status)
		}
		if r := h.Do(t, "GET", base+"/entries/cg1", ""); r.Status != 200 {
			t.Fatalf("cg1 after deleting e4: %d", r.Status)
		}
	})
}

func TestSlidingTTLOnEveryKey(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "100"})
		c := srv.Client(t)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`)
		h.Do(t, "POST", base+"/context", `{"id":"c1"}`)
		for _, k := range ownKeys(keys) {
			if got := ttlOf(t, c, k); got < 95 || got > 100 {
				t.Fatalf("TTL of %s = %d, want about 100", k, got)
			}
		}
		var body struct {
			TTL int64 `json:"ttl_seconds"`
		}
		h.Do(t, "GET", base+"/ttl", "").JSON(t, &body)
		if body.TTL < 95 || body.TTL > 100 {
			t.Fatalf("GET ttl = %d", body.TTL)
		}

		// Reads do not slide.
		for _, k := range ownKeys(keys) {
			c.Do(t.Context(), c.B().Expire().Key(k).Seconds(50).Build())
		}
		h.Do(t, "GET", base+"/entries", "")
		h.Do(t, "GET", base+"/entries/q1", "")
		if got := ttlOf(t, c, keys.Entries); got > 50 {
			t.Fatalf("a read slid the TTL to %d", got)
		}

		// PUT ttl: every key at once; later writes do not shorten it.
		if r := h.Do(t, "PUT", base+"/ttl", `{"ttl_seconds":1000}`); r.Status != 200 {
			t.Fatalf("PUT ttl: %d %s", r.Status, r.Body)
		}
		h.Do(t, "PUT", base+"/entries/q1/feedback", `{"feedback_score":2}`)
		for _, k := range ownKeys(keys) {
			if got := ttlOf(t, c, k); got < 990 {
				t.Fatalf("TTL of %s = %d after a write, want the session's 1000", k, got)
			}
		}
		// 0 persists every key, and writes keep it persistent.
		h.Do(t, "PUT", base+"/ttl", `{"ttl_seconds":0}`)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		for _, k := range ownKeys(keys) {
			if got := ttlOf(t, c, k); got != -1 {
				t.Fatalf("TTL of %s = %d after ttl 0, want -1", k, got)
			}
		}
		h.Do(t, "GET", base+"/ttl", "").JSON(t, &body)
		if body.TTL != -1 {
			t.Fatalf("GET ttl = %d, want -1", body.TTL)
		}

		// Unknown session: 404, and nothing created.
		before := srv.DBSize(t)
		for _, r := range []sidecartest.Reply{
			h.Do(t, "GET", "/v1/users/u1/sessions/none/ttl", ""),
			h.Do(t, "PUT", "/v1/users/u1/sessions/none/ttl", `{"ttl_seconds":5}`),
		} {
			if r.Status != 404 {
				t.Fatalf("ttl on a missing session: %d %s", r.Status, r.Body)
			}
		}
		if after := srv.DBSize(t); after != before {
			t.Fatalf("keys %d -> %d after 404s", before, after)
		}
	})
}

func TestNoExpiryWhenTTLZero(t *testing.T) {
	srv := redisstoretest.New(t)
	h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "0"})
	c := srv.Client(t)
	h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
	for _, k := range []string{keys.Entries, keys.Record, keys.Index} {
		if got := ttlOf(t, c, k); got != -1 {
			t.Fatalf("TTL of %s = %d with SESSION_TTL_SECONDS=0, want -1", k, got)
		}
	}
}

func TestMaxEntriesKeepsTheNewest(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, envconf.Env{"SESSION_MAX_ENTRIES": "3"})
		c := srv.Client(t)
		for i := range 7 {
			h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"question":"q%d","answer":"a","qa_id":"e%d"}`, i, i))
			h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`)
		}
		got := lrange(t, c, keys.Entries)
		if len(got) != 3 || !strings.Contains(got[0], `"e4"`) || !strings.Contains(got[2], `"e6"`) {
			t.Fatalf("entries kept: %q", got)
		}
		if n := len(lrange(t, c, keys.Traces)); n != 3 {
			t.Fatalf("%d traces kept, want 3", n)
		}
		if r := h.Do(t, "GET", base+"/entries/e3", ""); r.Status != 404 {
			t.Fatalf("trimmed entry e3: %d", r.Status)
		}
		for _, id := range []string{"e4", "e5", "e6"} {
			r := h.Do(t, "PUT", base+"/entries/"+id+"/feedback", `{"feedback_score":4}`)
			if r.Status != 200 || !strings.Contains(r.Body, `"qa_id": "`+id+`"`) {
				t.Fatalf("feedback on %s after trims: %d %s", id, r.Status, r.Body)
			}
		}
		// The index forgot the trimmed ids.
		n, _ := c.Do(t.Context(), c.B().Hlen().Key(keys.Index).Build()).AsInt64()
		if n != 3+4 { // three ids + #head, #len, #first, #last
			t.Fatalf("index holds %d fields, want 7", n)
		}
	})
}

func TestBadInputIs4xxAndWritesNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_MAX_BODY_BYTES": "4096"})
		big := strings.Repeat("x", 5000)
		tests := []struct {
			name, method, path, body string
			status                   int
			code                     string
		}{
			{"bad user id", "POST", "/v1/users/a:b/sessions/s/entries", `{"question":"q","answer":"a"}`, 400, "invalid_id"},
			{"bad session id", "POST", "/v1/users/u/sessions/s%7B1%7D/entries", `{"question":"q","answer":"a"}`, 400, "invalid_id"},
			{"bad qa_id in body", "POST", base + "/entries", `{"question":"q","answer":"a","qa_id":"a b"}`, 400, "invalid_field"},
			{"qa_id dot-dot", "POST", base + "/entries", `{"question":"q","answer":"a","qa_id":".."}`, 400, "invalid_field"},
			{"context id dot", "POST", base + "/context", `{"id":"."}`, 400, "invalid_field"},
			{"missing answer", "POST", base + "/entries", `{"question":"q"}`, 400, "invalid_field"},
			{"score as string", "POST", base + "/entries", `{"question":"q","answer":"a","feedback_score":"5"}`, 400, "invalid_field"},
			{"score out of range", "POST", base + "/entries", `{"question":"q","answer":"a","feedback_score":9}`, 400, "invalid_field"},
			{"unknown field", "POST", base + "/entries", `{"question":"q","answer":"a","mood":"happy"}`, 400, "unknown_field"},
			{"graph ids bad key", "POST", base + "/entries", `{"question":"q","answer":"a","used_graph_element_ids":{"x":[]}}`, 400, "invalid_field"},
			{"malformed", "POST", base + "/entries", `{"question":`, 400, "invalid_json"},
			{"too large", "POST", base + "/entries", `{"question":"` + big + `","answer":"a"}`, 413, "body_too_large"},
			{"last_n 0", "GET", base + "/entries?last_n=0", ``, 400, "invalid_query"},
			{"last_n huge", "GET", base + "/entries?last_n=100000", ``, 400, "invalid_query"},
			{"last_n text", "GET", base + "/entries?last_n=ten", ``, 400, "invalid_query"},
			{"empty search", "GET", base + "/search?q=%20", ``, 400, "invalid_query"},
			{"empty patch", "PATCH", base + "/entries/q1", `{}`, 400, "invalid_field"},
			{"patch question null", "PATCH", base + "/entries/q1", `{"question":null}`, 400, "invalid_field"},
			{"feedback empty", "PUT", base + "/entries/q1/feedback", `{}`, 400, "invalid_field"},
			{"feedback 0", "PUT", base + "/entries/q1/feedback", `{"feedback_score":0}`, 400, "invalid_field"},
			{"feedback on missing entry", "PUT", base + "/entries/q1/feedback", `{"feedback_score":3}`, 404, "not_found"},
			{"patch missing entry", "PATCH", base + "/entries/q1", `{"answer":"x"}`, 404, "not_found"},
			{"clear feedback missing", "DELETE", base + "/entries/q1/feedback", ``, 404, "not_found"},
			{"delete missing entry", "DELETE", base + "/entries/q1", ``, 404, "not_found"},
			{"get missing entry", "GET", base + "/entries/q1", ``, 404, "not_found"},
			{"context not object", "POST", base + "/context", `[1]`, 400, "invalid_field"},
			{"context id not string", "POST", base + "/context", `{"id":5}`, 400, "invalid_field"},
			{"trace params array", "POST", base + "/traces", `{"origin_function":"f","status":"s","method_params":[]}`, 400, "invalid_field"},
			{"ttl negative", "PUT", base + "/ttl", `{"ttl_seconds":-5}`, 400, "invalid_field"},
			{"ttl missing", "PUT", base + "/ttl", `{}`, 400, "invalid_field"},
			{"ttl string", "PUT", base + "/ttl", `{"ttl_seconds":"5"}`, 400, "invalid_field"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := h.Do(t, tc.method, tc.path, tc.body)
				if r.Status != tc.status || r.Code() != tc.code {
					t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
				}
			})
		}
		if n := srv.DBSize(t); n != 0 {
			t.Fatalf("%d keys written by rejected requests", n)
		}
	})
}

// Between two slides (at most a minute apart for a 7-day TTL) a write that
// creates a key of the session still gives it the session's TTL at once.
func TestNewKeysGetTheirTTLBetweenSlides(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil) // SESSION_TTL_SECONDS=604800: slides at most every 60 s
		c := srv.Client(t)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`)
		h.Do(t, "POST", base+"/context", `{"id":"c1"}`)
		for _, k := range ownKeys(keys) {
			if got := ttlOf(t, c, k); got < 604800-60 || got > 604800 {
				t.Fatalf("TTL of %s = %d, want about 604800", k, got)
			}
		}
		// A TTL that a write did not re-apply is at most a minute short.
		c.Do(t.Context(), c.B().Expire().Key(keys.Entries).Seconds(604000).Build())
		h.Do(t, "PUT", base+"/entries/q1/feedback", `{"feedback_score":3}`)
		if got := ttlOf(t, c, keys.Entries); got < 604000-60 {
			t.Fatalf("TTL %d", got)
		}
		// PUT ttl always applies at once.
		h.Do(t, "PUT", base+"/ttl", `{"ttl_seconds":900000}`)
		for _, k := range ownKeys(keys) {
			if got := ttlOf(t, c, k); got < 899990 {
				t.Fatalf("TTL of %s = %d after PUT ttl", k, got)
			}
		}
	})
}
