package messages_test

import (
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A persisted session's search index never expires, and the user's list
// of sessions holding documents lives as long as the longest-lived session
// it lists: a write of a session with a TTL never gives the list a TTL
// while a session without expiry is listed. The session with a TTL keeps
// its own index's TTL.
func TestSearchKeysOfPersistedSession(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		keep := "/v1/users/alice/sessions/keep"
		if rep := h.Do(t, "POST", keep+"/messages", `{"role":"user","content":"hello"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		if rep := h.Do(t, "PUT", keep+"/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatal(rep)
		}
		if rep := h.Do(t, "POST", keep+"/messages", `{"role":"user","content":"zebra crossing"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/brief/messages", `{"role":"user","content":"zebra"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		c := srv.Client(t)
		l := srv.Layout()
		for _, k := range []struct {
			key     string
			expires bool
			why     string
		}{
			{l.SearchDocs("alice", "keep"), false, "the session keep never expires"},
			{l.SearchSessions("alice"), false, "it lists keep, which never expires"},
			{l.SearchDocs("alice", "brief"), true, "the session brief expires"},
		} {
			got, err := c.Do(t.Context(), c.B().Ttl().Key(k.key).Build()).AsInt64()
			if err != nil || got == -2 || (got > 0) != k.expires {
				t.Errorf("%s: got TTL %d (%v), want expires %v (%s)", k.key, got, err, k.expires, k.why)
			}
		}
		var sessions []string
		for _, g := range find(t, h, "/v1/users/alice/search?", "zebra") {
			sessions = append(sessions, g.SessionID)
		}
		if slices.Sort(sessions); !slices.Equal(sessions, []string{"brief", "keep"}) {
			t.Fatalf("zebra: found in sessions %v, want brief and keep", sessions)
		}
	})
}
