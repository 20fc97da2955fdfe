package sessions_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestSearchMarkerOutlivesIndex: the user's on-demand marker
// (agent_search_stats) stays once the index is built, and lives at least
// as long as every index key of the user (the sessions' documents hashes
// and the user's sessions list). A search slides the marker, never
// shortening the TTL a longer-lived session's writes gave it (or taking
// away the no-expiry of a session without one), and an indexed write of
// such a session gives it that session's TTL: a marker gone before the
// documents stops the user's writes indexing while the documents stay,
// stale, and the next search builds everything again.
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
						c := srv.Client(t)
						docs := srv.Layout().SearchEntryDocs("u", "long")
						if n, err := c.Do(t.Context(), c.B().Hexists().Key(docs).Field("=q2").Build()).AsInt64(); err != nil || n != 1 {
							t.Fatalf("q2 in %s: %d %v, want indexed by its append", docs, n, err)
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
				if m == -2 {
					t.Fatalf("no marker %s after the user's searches", marker)
				}
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
