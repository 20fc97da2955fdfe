package messages_test

import (
	"github.com/agentsidecar/agentsidecar/envconf"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The user's search keys live as long as the longest-lived session they
// hold: a write of a session with a TTL never gives a postings or
// statistics key held by a session without expiry a TTL.
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
		for _, key := range []string{l.SearchPostings("alice", "zebra"), l.SearchStats("alice")} {
			got, err := c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64()
			if err != nil || got != -1 {
				t.Errorf("%s: got TTL %d (%v), want -1 (the session keep never expires)", key, got, err)
			}
		}
		if got := hitIDs(find(t, h, "/v1/users/alice/search?", "zebra")); len(got) == 0 {
			t.Fatal("zebra: no hit")
		}
	})
}
