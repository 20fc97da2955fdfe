package sessions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// cogneeEntry is an entry as Cognee's json.dumps writes it, with an answer
// of size bytes.
func cogneeEntry(qa string, size int) string {
	return fmt.Sprintf(`{"time": "2026-11-23T10:00:00.000000+00:00", "qa_id": %q, "question": "q %s", "context": "", "answer": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`,
		qa, qa, strings.Repeat("a", size))
}

func qaIDs(t *testing.T, body string) []string {
	t.Helper()
	var es []struct {
		QAID string `json:"qa_id"`
	}
	if err := json.Unmarshal([]byte(body), &es); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.QAID
	}
	return out
}

// An answer stops at SIDECAR_MAX_ANSWER_BYTES: fewer elements (the newest,
// oldest first) and Sidecar-Truncated: true, never a silent cut; under the
// cap there is no such header.
func TestListAnswersStopAtTheByteCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_MAX_ANSWER_BYTES": "65536"})
		c := srv.Client(t)
		for i := range 12 {
			rpush(t, c, keys.Entries, cogneeEntry(fmt.Sprintf("e%02d", i), 10_000))
		}
		r := h.Do(t, "GET", base+"/entries?last_n=1000", "")
		if r.Status != 200 || r.Header.Get(sidecar.TruncatedHeader) != "true" {
			t.Fatalf("last_n=1000 over 120 kB with a 64 KiB cap: %d, %s %q", r.Status, sidecar.TruncatedHeader, r.Header.Get(sidecar.TruncatedHeader))
		}
		if len(r.Body) > 65536 {
			t.Fatalf("answer of %d bytes past the 65536 cap", len(r.Body))
		}
		got := qaIDs(t, r.Body)
		if want := []string{"e06", "e07", "e08", "e09", "e10", "e11"}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("got %v, want the newest that fit, oldest first: %v", got, want)
		}
		r = h.Do(t, "GET", base+"/entries?last_n=3", "")
		if r.Header.Get(sidecar.TruncatedHeader) != "" || strings.Join(qaIDs(t, r.Body), ",") != "e09,e10,e11" {
			t.Fatalf("last_n=3 under the cap: %q %s", r.Header.Get(sidecar.TruncatedHeader), r.Body)
		}
		for i := range 12 {
			rpush(t, c, keys.Context, fmt.Sprintf(`{"id": "c%02d", "text": %q}`, i, strings.Repeat("b", 10_000)))
		}
		r = h.Do(t, "GET", base+"/context", "")
		if r.Header.Get(sidecar.TruncatedHeader) != "true" || !strings.HasPrefix(r.Body, `[{"id": "c00"`) || len(r.Body) > 65536 {
			t.Fatalf("context over the cap: %q %d bytes %.40s", r.Header.Get(sidecar.TruncatedHeader), len(r.Body), r.Body)
		}
	})
}

// A search reads newest first and examines at most SearchMaxExamined
// entries: a match older than that is not found (documented), a newer one
// is, and a session of any size costs the same bounded reads.
func TestSearchExaminesABoundedNumberOfEntries(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		rpush(t, c, keys.Entries, `{"time": "2026-11-23T10:00:00.000000+00:00", "qa_id": "old", "question": "where is the zebra", "context": "", "answer": "far", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`)
		batch := make([]string, 0, 500)
		for i := range sessions.SearchMaxExamined {
			batch = append(batch, cogneeEntry(fmt.Sprintf("n%d", i), 10))
			if len(batch) == cap(batch) {
				rpush(t, c, keys.Entries, batch...)
				batch = batch[:0]
			}
		}
		rpush(t, c, keys.Entries, `{"time": "2026-11-23T10:00:00.000000+00:00", "qa_id": "new", "question": "the zebra again", "context": "", "answer": "near", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`)
		r := h.Do(t, "GET", base+"/search?q=zebra&limit=10", "")
		if r.Status != 200 || strings.Join(qaIDs(t, r.Body), ",") != "new" {
			t.Fatalf("search past %d entries: %d %s, want only the newer match", sessions.SearchMaxExamined, r.Status, r.Body)
		}
	})
}

// Deleting a session's last entry leaves no qa index behind (it used to be
// rebuilt empty, without a TTL, and outlive the session forever).
func TestDeletingTheLastEntryLeavesNoIndex(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"only","question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "DELETE", base+"/entries/only", ""); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if n, err := c.Do(t.Context(), c.B().Exists().Key(keys.Index).Build()).AsInt64(); err != nil || n != 0 {
			t.Fatalf("qa index after the last entry went: exists=%d (%v), want gone", n, err)
		}
		for _, k := range []string{keys.Record} {
			if ttl := ttlOf(t, c, k); ttl <= 0 {
				t.Fatalf("%s: TTL %d, want the session's", k, ttl)
			}
		}
	})
}
