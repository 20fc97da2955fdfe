package events_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

const base = "/v1/users/u1/sessions/s1"

// TestEveryWriteEmitsOnce drives every write route of a session, each
// refused or repeated write beside it, and reads the stream in Redis:
// exactly one event per write, in write order, none for the others.
func TestEveryWriteEmitsOnce(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, always)
		steps := []struct {
			method, path, body string
			header             []string
			status             int
			event              string // "" = must emit nothing
		}{
			{"POST", "/v1/users/u1/sessions", `{"session_id":"s1","title":"t"}`, nil, 201, "status"},
			{"POST", "/v1/users/u1/sessions", `{"session_id":"s1"}`, nil, 409, ""},
			{"POST", base + "/entries", `{"question":"q","answer":"a","qa_id":"q1"}`, nil, 201, "entry_appended"},
			{"POST", base + "/entries", `{"question":"q","answer":"a","qa_id":"q1"}`, nil, 200, ""},
			{"PATCH", base + "/entries/q1", `{"answer":"b"}`, nil, 200, "entry_updated"},
			{"PUT", base + "/entries/q1/feedback", `{"feedback_score":1}`, nil, 200, "feedback"},
			{"PUT", base + "/entries/nope/feedback", `{"feedback_score":1}`, nil, 404, ""},
			{"DELETE", base + "/entries/q1/feedback", ``, nil, 200, "feedback"},
			{"POST", base + "/traces", `{"origin_function":"f","status":"ok"}`, nil, 201, "trace_appended"},
			{"POST", base + "/context", `{"id":"c1","x":"0"}`, nil, 201, "context_changed"},
			{"POST", base + "/context", `{"id":"c1","x":"0"}`, nil, 200, ""},
			{"PATCH", base + "/context/c1", `{"x":"1"}`, nil, 200, "context_changed"},
			{"DELETE", base + "/context/c1", ``, nil, 204, "context_changed"},
			{"DELETE", base + "/context/c1", ``, nil, 404, ""},
			{"POST", base + "/usage", `{"model":"gpt-4o","tokens_in":7}`, []string{"Idempotency-Key", "k1"}, 201, "usage"},
			{"POST", base + "/usage", `{"model":"gpt-4o","tokens_in":7}`, []string{"Idempotency-Key", "k1"}, 200, ""},
			{"PUT", base + "/ttl", `{"ttl_seconds":3600}`, nil, 200, "ttl_changed"},
			{"PATCH", base, `{"title":"u"}`, nil, 200, "session_updated"},
			{"PATCH", base + "/state", `{"step":1}`, nil, 200, "state_changed"},
			{"POST", base + "/events", `{"event":"x-delta","data":{"text":"hi"}}`, nil, 201, "x-delta"},
			{"POST", base + "/events", `{"event":"status","data":{}}`, nil, 400, ""},
			{"POST", base + "/abort", ``, nil, 202, "abort"},
			{"POST", base + "/abort", ``, nil, 202, ""},
			{"DELETE", base + "/abort", ``, nil, 204, "abort_cleared"},
			{"DELETE", base + "/abort", ``, nil, 204, ""},
			{"DELETE", base + "/entries/q1", ``, nil, 204, "entry_deleted"},
			{"DELETE", base + "/entries/q1", ``, nil, 404, ""},
			{"POST", base + "/complete", `{}`, nil, 200, "status"},
			{"POST", base + "/complete", `{}`, nil, 200, ""},
			{"POST", base + "/fail", `{}`, nil, 409, ""},
		}
		var want []string
		for _, st := range steps {
			r := h.Do(t, st.method, st.path, st.body, st.header...)
			if r.Status != st.status {
				t.Fatalf("%s %s: got %d %s, want %d", st.method, st.path, r.Status, r.Body, st.status)
			}
			if st.event != "" {
				want = append(want, st.event)
			}
			key := srv.Layout().SessionEvents("u1", "s1")
			if got := xtypes(t, srv, key); !slices.Equal(got, want) {
				t.Fatalf("after %s %s: events %v, want %v", st.method, st.path, got, want)
			}
		}
		// Delete: the stream keeps only its deleted event.
		if r := h.Do(t, "DELETE", base, ""); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if got := xtypes(t, srv, srv.Layout().SessionEvents("u1", "s1")); !slices.Equal(got, []string{"deleted"}) {
			t.Fatalf("after delete: %v, want [deleted]", got)
		}
		if r := h.Do(t, "DELETE", base, ""); r.Status != 404 {
			t.Fatalf("delete again: %d", r.Status)
		}
		if got := xtypes(t, srv, srv.Layout().SessionEvents("u1", "s1")); len(got) != 1 {
			t.Fatalf("a refused delete emitted: %v", got)
		}
		// The user's stream gets user state changes.
		if r := h.Do(t, "PATCH", "/v1/users/u1/state", `{"a":1}`); r.Status != 200 {
			t.Fatalf("user state: %d %s", r.Status, r.Body)
		}
		if got := xtypes(t, srv, srv.Layout().UserEvents("u1")); !slices.Equal(got, []string{"user_state_changed"}) {
			t.Fatalf("user events %v", got)
		}
	})
}

// TestLargeDataTruncated: an object past 8 KiB is announced by id and kind.
func TestLargeDataTruncated(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, always)
		big := strings.Repeat("x", 9000)
		if r := h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"`+big+`","qa_id":"q1"}`); r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		c := srv.Client(t)
		entries, err := c.Do(t.Context(), c.B().Xrange().Key(srv.Layout().SessionEvents("u1", "s1")).Start("-").End("+").Build()).AsXRange()
		if err != nil || len(entries) != 1 {
			t.Fatalf("xrange: %v %v", entries, err)
		}
		if got, want := entries[0].FieldValues["d"], `{"id":"q1","kind":"entry","truncated":true}`; got != want {
			t.Fatalf("data %s, want %s", got, want)
		}
	})
}

// TestStreamTTL: the stream has the session's TTL, moves with PUT .../ttl.
func TestStreamTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, always)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		key := srv.Layout().SessionEvents("u1", "s1")
		c := srv.Client(t)
		ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64()
		if ttl <= 0 || ttl > 604800 {
			t.Fatalf("TTL %d, want 1..604800", ttl)
		}
		h.Do(t, "PUT", base+"/ttl", `{"ttl_seconds":0}`)
		if ttl, _ = c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64(); ttl != -1 {
			t.Fatalf("TTL after persist %d, want -1", ttl)
		}
	})
}
