package sessions_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The tail repair of the qa_id index must not trust the element at the
// index's old last position alone: when Cognee deleted entries and
// re-created the last one (the same qa_id) before appending more, that
// element matches, and an index that then indexed only the new tail would
// not know an entry Cognee created in between (a read answered 404 and a
// retried append stored a duplicate). Sidecar a, b, c; Cognee deletes a
// and c, creates y, c, z: the list [b, y, c, z] has the old last id c at
// the old last position, but a new first entry and new times, which the
// index's fingerprints see.
func TestIndexTailRepairMissesAnEntryBeforeTheTail(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		for _, id := range []string{"a", "b", "c"} {
			if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"`+id+`","question":"q","answer":"a"}`); r.Status != 201 {
				t.Fatalf("append %s: %d %s", id, r.Status, r.Body)
			}
		}
		cogneeDelete(t, c, keys.Entries, 0) // a: [b, c]
		cogneeDelete(t, c, keys.Entries, 1) // c: [b]
		rpush(t, c, keys.Entries, cogneeEntry("y", 10), cogneeEntry("c", 10), cogneeEntry("z", 10))
		if r := h.Do(t, "GET", base+"/entries/y", ""); r.Status != 200 {
			t.Errorf("GET y, which Cognee stored: %d %s, want 200", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"y","question":"q","answer":"a"}`); r.Status != 200 {
			t.Errorf("retried append of y: %d %s, want 200 (already stored)", r.Status, r.Body)
		}
		var ids []string
		for _, el := range lrange(t, c, keys.Entries) {
			for _, id := range []string{"a", "b", "c", "y", "z"} {
				if strings.Contains(el, `"qa_id": "`+id+`"`) {
					ids = append(ids, id)
				}
			}
		}
		if strings.Join(ids, ",") != "b,y,c,z" {
			t.Errorf("entries %v, want [b y c z]", ids)
		}
	})
}
