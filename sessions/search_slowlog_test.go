package sessions_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// slowlogSize is the Cognee-written session of TestSearchBuildNeverStalls:
// 2 000 entries (enough for many steps of every kind);
// SIDECAR_TEST_SEARCH_SLOWLOG=20000 runs the 20 000.
func slowlogSize(t *testing.T) int {
	if v := os.Getenv("SIDECAR_TEST_SEARCH_SLOWLOG"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			t.Fatalf("SIDECAR_TEST_SEARCH_SLOWLOG=%q: want a number of entries of at least 100", v)
		}
		return n
	}
	return 2000
}

// words of the generated entries: a vocabulary large enough that each
// entry holds about 40 distinct terms and the user's postings are many.
var slowlogVocab = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 3000)
	for i := range out {
		var b strings.Builder
		for range 4 + r.IntN(6) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		out[i] = b.String()
	}
	return out
}()

// TestSearchBuildNeverStalls: Cognee wrote a big session, the sidecar
// touched it once, then the user's first relevance searches build the
// index (on-demand) while the background worker goes on. Redis's SLOWLOG,
// set to 5 ms, records no command or script: every build, catch-up and
// search step stays under it. The build ends (no "index" field) and finds
// an entry of the oldest page.
func TestSearchBuildNeverStalls(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := startSearch(t, srv, nil)
	c := srv.Client(t)
	n := slowlogSize(t)
	cogneeSession(t, c, srv.Layout().Session("u", "big").Entries, n)
	if rep := h.Do(t, "POST", "/v1/users/u/sessions/big/entries", `{"qa_id":"own","question":"a sidecar touch","answer":"ok"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "5000"}, {"SLOWLOG", "RESET"}} {
		if err := c.Do(t.Context(), c.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	calls0 := scriptCalls(t, c)
	built := false
	// the first search builds for its budget, the worker goes on (a
	// search meanwhile answers "building" at once)
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		rep := h.Do(t, "GET", "/v1/users/u/search?q=xylophonist", "")
		if rep.Status != 200 {
			t.Fatal(rep)
		}
		var out struct {
			Results []struct {
				ID string `json:"id"`
			} `json:"results"`
			Index string `json:"index"`
		}
		rep.JSON(t, &out)
		if out.Index == "" {
			if len(out.Results) != 1 || out.Results[0].ID != "c3" {
				t.Fatalf("built: %s, want c3", rep.Body)
			}
			built = true
			break
		}
	}
	if !built {
		t.Fatal("the build never ended")
	}
	if rep := h.Do(t, "GET", "/v1/users/u/sessions/big/search?rank=relevance&q=xylophonist", ""); rep.Status != 200 || !strings.Contains(rep.Body, `"c3"`) || strings.Contains(rep.Body, `"index"`) {
		t.Fatalf("session search: %s", rep)
	}
	calls := scriptCalls(t, c) - calls0
	// On this shared 2-core machine a lone PTTL is now and then logged at
	// 7-12 ms (the server descheduled): a few slow scripts are noise, a
	// step's own cost shows in most of them.
	slow := slowScripts(t, c)
	t.Logf("%d entries: %d script calls, %d logged over 5 ms", n, calls, slow)
	if info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString(); err == nil {
		for _, line := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(line, "cmdstat_fcall:") {
				t.Logf("%s (every script call, the build's steps among them)", line)
			}
		}
	}
	if slow > max(2, int(calls)/20) {
		t.Errorf("%d of %d script calls over 5 ms", slow, calls)
	}
}

// cogneeSession writes n entries into the list key as Cognee does (RPUSH,
// 1 000 at a time), each of 45 words drawn from slowlogVocab; entry c3's
// first word is "xylophonist".
func cogneeSession(t *testing.T, c rueidis.Client, key string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	at := time.Now().Add(-time.Hour)
	batch := make([]string, 0, 1000)
	for i := range n {
		words := make([]string, 45)
		for j := range words {
			words[j] = slowlogVocab[r.IntN(len(slowlogVocab))]
		}
		if i == 3 {
			words[0] = "xylophonist"
		}
		at = at.Add(time.Millisecond)
		batch = append(batch, fmt.Sprintf(`{"time": %q, "question": %q, "context": "", "answer": %q, "qa_id": "c%d", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`,
			at.UTC().Format("2006-01-02T15:04:05.000000"), strings.Join(words[:10], " ")+"?", strings.Join(words[10:], " "), i))
		if len(batch) == cap(batch) || i == n-1 {
			rpush(t, c, key, batch...)
			batch = batch[:0]
		}
	}
}

// slowScripts logs every command in the SLOWLOG and answers how many of
// them are script calls (FCALL, FCALL_RO).
func slowScripts(t *testing.T, c rueidis.Client) int {
	t.Helper()
	logged, err := c.Do(t.Context(), c.B().Arbitrary("SLOWLOG", "GET", "1000").Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	slow := 0
	for _, e := range logged {
		f, _ := e.ToArray()
		if len(f) < 4 {
			continue
		}
		us, _ := f[2].AsInt64()
		args, _ := f[3].AsStrSlice()
		for i, a := range args {
			if len(a) > 40 {
				args[i] = a[:40] + "…"
			}
		}
		if len(args) > 0 && strings.HasPrefix(args[0], "FCALL") {
			slow++
		}
		b, _ := json.Marshal(args)
		t.Logf("SLOWLOG: %d µs: %s", us, b)
	}
	return slow
}

// scriptCalls is how many FCALL and FCALL_RO the server ran.
func scriptCalls(t *testing.T, c rueidis.Client) int64 {
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_fcall"); ok {
			if i := strings.Index(rest, "calls="); i >= 0 {
				v, _ := strconv.ParseInt(strings.SplitN(rest[i+6:], ",", 2)[0], 10, 64)
				n += v
			}
		}
	}
	return n
}
