package sessions_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestSearchMarkerOutlivesIndex: the user's search statistics (the
// on-demand marker, which counts the user's documents and queues their
// purges) live at least as long as every search key of the user. A
// search slides the marker, never shortening the TTL a longer-lived
// session's writes gave it (or taking away the no-expiry of a session
// without one): a marker gone before them makes the next search count
// those documents as absent, and a delete of that session then purges
// none of its postings (which, for a session without expiry, never go).
func TestSearchMarkerOutlivesIndex(t *testing.T) {
	for _, own := range []string{"86400", "0"} {
		t.Run("ttl_seconds="+own, func(t *testing.T) {
			redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
				h := startSearch(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "600"})
				long := "/v1/users/u/sessions/long"
				if rep := h.Do(t, "POST", long+"/entries", `{"qa_id":"q1","question":"gardening tips","answer":"water"}`); rep.Status != 201 {
					t.Fatal(rep)
				}
				if rep := h.Do(t, "PUT", long+"/ttl", `{"ttl_seconds":`+own+`}`); rep.Status != 200 {
					t.Fatal(rep)
				}
				for i, q := range []string{"gardening", "tomatoes"} {
					if rep := h.Do(t, "GET", "/v1/users/u/search?q="+q, ""); rep.Status != 200 {
						t.Fatal(rep)
					}
					if i == 0 { // the user has an index now: this entry is indexed as written
						if rep := h.Do(t, "POST", long+"/entries", `{"qa_id":"q2","question":"tomatoes in pots","answer":"yes"}`); rep.Status != 201 {
							t.Fatal(rep)
						}
					}
				}
				c := srv.Client(t)
				pttl := func(k string) int64 {
					n, err := c.Do(t.Context(), c.B().Pttl().Key(k).Build()).AsInt64()
					if err != nil {
						t.Fatal(err)
					}
					return n
				}
				marker := srv.Layout().SearchStats("u")
				m := pttl(marker)
				keys := srv.Keys(t, "agent_search*")
				if len(keys) < 3 {
					t.Fatalf("search keys %v", keys)
				}
				for _, k := range keys {
					if k == marker || strings.HasPrefix(k, "agent_search_stats") {
						continue
					}
					if p := pttl(k); m != -1 && (p == -1 || p > m+1000) {
						t.Errorf("%s lives %d ms, the marker %d ms", k, p, m)
					}
				}
			})
		})
	}
}
