package sessions_test

import (
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A session only Cognee wrote, whose entries a search took in (the
// catch-up's quiet write: no record to list the index's family in), then
// written by the sidecar (a record whose fams do not list that family):
// its DELETE removes the entries' index and the session's place in the
// user's search list too. It left both behind, and a user-wide search went
// on finding the deleted session's entries.
func TestDeleteRemovesTheIndexOfEntriesCogneeWrote(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := startSearch(t, srv, nil)
		c, l := srv.Client(t), srv.Layout()
		rpush(t, c, l.Session("bob", "s").Entries, cogneeQA("c1", "kubernetes pods", "restart them", time.Now().Add(-time.Minute)))
		if _, ids := hits(t, h, "/v1/users/bob/sessions/s/search?rank=relevance&", "kubernetes"); ids != "/entry:c1" {
			t.Fatalf("session search: %s", ids)
		}
		// the sidecar's first write of the session, which indexes nothing
		if rep := h.Do(t, "PUT", "/v1/users/bob/sessions/s/ttl", `{"ttl_seconds":3600}`); rep.Status != 200 {
			t.Fatalf("ttl: %s", rep)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/bob/sessions/s", ""); rep.Status != 204 {
			t.Fatalf("delete: %s", rep)
		}
		if _, ids := hits(t, h, "/v1/users/bob/search?", "kubernetes"); ids != "" {
			t.Errorf("the deleted session's entry is still found: %s", ids)
		}
		for _, k := range []string{l.SearchEntryDocs("bob", "s")} {
			if n, _ := c.Do(t.Context(), c.B().Exists().Key(k).Build()).AsInt64(); n != 0 {
				t.Errorf("%s left by the delete", k)
			}
		}
		if _, err := c.Do(t.Context(), c.B().Zscore().Key(l.SearchSessions("bob")).Member("s").Build()).AsFloat64(); err == nil {
			t.Errorf("the deleted session is still in %s", l.SearchSessions("bob"))
		}
	})
}
