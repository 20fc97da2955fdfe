package sessions_test

import (
	"fmt"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// After Cognee only appended (RPUSH), the sidecar indexes just the new tail
// instead of rescanning the whole list: a field the index holds for an
// older entry survives (a full rebuild would delete and rewrite it), and
// Cognee's new entries are found, read and updated.
func TestCogneeAppendsAreIndexedByTheirTail(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		for i := range 3 {
			if r := h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"qa_id":"s%d","question":"q","answer":"a"}`, i)); r.Status != 201 {
				t.Fatalf("append: %d %s", r.Status, r.Body)
			}
		}
		// A marker only a full rebuild would remove (no entry has this id).
		if err := c.Do(t.Context(), c.B().Hset().Key(keys.Index).FieldValue().FieldValue("marker", "99").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		rpush(t, c, keys.Entries, cogneeEntry("c0", 10), cogneeEntry("c1", 10))
		if r := h.Do(t, "GET", base+"/entries/c1", ""); r.Status != 200 {
			t.Fatalf("GET a Cognee entry: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "PUT", base+"/entries/c0/feedback", `{"feedback_score":5}`); r.Status != 200 {
			t.Fatalf("feedback on a Cognee entry: %d %s", r.Status, r.Body)
		}
		rpush(t, c, keys.Entries, cogneeEntry("c2", 10))
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"s3","question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("append after a Cognee RPUSH: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"c2","question":"q","answer":"a"}`); r.Status != 200 {
			t.Fatalf("append of Cognee's c2 again: %d %s, want 200 (already stored)", r.Status, r.Body)
		}
		idx, err := c.Do(t.Context(), c.B().Hgetall().Key(keys.Index).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		if idx["marker"] != "99" {
			t.Fatalf("the index was rebuilt whole (marker gone): %v", idx)
		}
		want := map[string]string{"s0": "0", "s1": "1", "s2": "2", "c0": "3", "c1": "4", "c2": "5", "s3": "6", "#len": "7", "#last": "s3"}
		for k, v := range want {
			if idx[k] != v {
				t.Fatalf("index[%s] = %q, want %q (index %v)", k, idx[k], v, idx)
			}
		}
	})
}
