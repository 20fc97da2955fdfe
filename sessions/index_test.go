package sessions_test

import (
	"fmt"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
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

// A session's record answers the entries list's length as entry_count,
// also after Cognee appended or deleted entries directly (its record then
// holds the count of the sidecar's last write).
func TestRecordEntryCountFollowsCogneeWrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory)
		c := srv.Client(t)
		for i := range 2 {
			if r := h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"qa_id":"s%d","question":"q","answer":"a"}`, i)); r.Status != 201 {
				t.Fatalf("append: %d %s", r.Status, r.Body)
			}
		}
		count := func() int {
			var rec struct {
				EntryCount int `json:"entry_count"`
			}
			r := h.Do(t, "GET", base, "")
			if r.Status != 200 {
				t.Fatalf("GET the record: %d %s", r.Status, r.Body)
			}
			r.JSON(t, &rec)
			return rec.EntryCount
		}
		rpush(t, c, keys.Entries, cogneeEntry("c0", 10), cogneeEntry("c1", 10))
		if got := count(); got != 4 {
			t.Errorf("entry_count after Cognee appended two: %d, want 4", got)
		}
		cogneeDelete(t, c, keys.Entries, 0)
		if got := count(); got != 3 {
			t.Errorf("entry_count after Cognee deleted one: %d, want 3", got)
		}
		// Listings answer the same count.
		for _, path := range []string{"/v1/users/u1/sessions", "/v1/sessions"} {
			var page struct {
				Sessions []struct {
					EntryCount int `json:"entry_count"`
				} `json:"sessions"`
			}
			r := h.Do(t, "GET", path, "")
			r.JSON(t, &page)
			if r.Status != 200 || len(page.Sessions) != 1 || page.Sessions[0].EntryCount != 3 {
				t.Errorf("GET %s: %d %s, want the one session with entry_count 3", path, r.Status, r.Body)
			}
		}
	})
}
