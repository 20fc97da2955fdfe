package sessions_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestSearchOnDemand: under the default SEARCH_INDEX=on-demand a user who
// never searched writes no search key (entries and messages alike); the
// user's first relevance search builds the index over the user's sessions
// and finds an entry and a message (no "index" field: built within the
// search's budget); from then on the user's writes are indexed and found.
func TestSearchOnDemand(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := startSearch(t, srv, nil)
		for _, w := range []struct{ path, body string }{
			{"/v1/users/bob/sessions/a/entries", `{"qa_id":"qa-1","question":"how do I deploy the gateway","answer":"with helm"}`},
			{"/v1/users/bob/sessions/b/messages", `{"id":"m-1","role":"user","content":"the gateway deployment failed"}`},
			{"/v1/users/bob/sessions/b/entries", `{"qa_id":"qa-2","question":"unrelated lunch","answer":"soup"}`},
		} {
			if rep := h.Do(t, "POST", w.path, w.body); rep.Status != 201 {
				t.Fatalf("%s: %s", w.path, rep)
			}
		}
		for _, k := range srv.Keys(t, "*") {
			if strings.Contains(k, "agent_search") {
				t.Errorf("a user who never searched has search key %s", k)
			}
		}
		rep := h.Do(t, "GET", "/v1/users/bob/search?q=deploy+gateway", "")
		if rep.Status != 200 || !strings.Contains(rep.Body, `"qa-1"`) || !strings.Contains(rep.Body, `"m-1"`) ||
			strings.Contains(rep.Body, `"qa-2"`) || strings.Contains(rep.Body, `"index"`) {
			t.Fatalf("first search: %s", rep)
		}
		// the user has an index now, and keeps it built: writes are
		// indexed (an entry's by the catch-up its append queued when the
		// pod still believed otherwise)
		c := srv.Client(t)
		marker := srv.Layout().SearchStats("bob")
		if b, err := c.Do(t.Context(), c.B().Hget().Key(marker).Field("build").Build()).ToString(); err != nil || b != "" {
			t.Fatalf("the marker's build after the first search: %q %v, want \"\" (built)", b, err)
		}
		if rep := h.Do(t, "POST", "/v1/users/bob/sessions/b/messages", `{"id":"m-2","role":"user","content":"kubernetes rollout"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		docs := srv.Layout().SearchDocs("bob", "b")
		if n, err := c.Do(t.Context(), c.B().Hexists().Key(docs).Field("=m-2").Build()).AsInt64(); err != nil || n != 1 {
			t.Fatalf("m-2 in %s: %d %v, want indexed by its append", docs, n, err)
		}
		if rep := h.Do(t, "POST", "/v1/users/bob/sessions/a/entries", `{"qa_id":"qa-3","question":"kubernetes pods","answer":"restart"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		rep = h.Do(t, "GET", "/v1/users/bob/search?q=kubernetes", "")
		if rep.Status != 200 || !strings.Contains(rep.Body, `"m-2"`) || !strings.Contains(rep.Body, `"qa-3"`) {
			t.Fatalf("after the first search: %s", rep)
		}
		// another user is untouched by bob's index
		if rep := h.Do(t, "POST", "/v1/users/carol/sessions/c/entries", `{"qa_id":"qa-9","question":"kubernetes too","answer":"ok"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		for _, k := range srv.Keys(t, "*carol*") {
			if strings.Contains(k, "agent_search") {
				t.Errorf("carol never searched, yet has %s", k)
			}
		}
	})
}
