package messages_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
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

// The messages' index a catch-up makes lives no longer than the messages
// it describes: a user's first search builds every session, idle ones
// near their end too. Once the catch-up gave a new index the session's
// full TTL, so it outlived the session; a session of the same id made
// again numbers its messages from 1 while the index's cursor ' mseq' (and
// its '=<id>' of the old messages) stayed: its messages sent without
// their documents were never indexed.
func TestMessagesIndexEndsWithItsSession(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil) // on-demand: the append writes no index
	post(t, h, `{"id":"m1","role":"user","content":"the walrus sleeps"}`, 201)
	c := srv.Client(t)
	order := messages.SessionKeys(srv.Layout(), "alice", "s1").Order
	// the session is near its end: 5 s left
	for _, k := range srv.Keys(t, "*") {
		if k != order && !strings.Contains(k, "s1") {
			continue
		}
		c.Do(t.Context(), c.B().Pexpire().Key(k).Milliseconds(5000).Build())
	}
	if got := find(t, h, "/v1/users/alice/search?", "walrus"); len(got) != 1 {
		t.Fatalf("walrus: %+v", got)
	}
	// the index ends with the session's record (the keys above were given
	// their 5 s one after another, a few ms apart)
	left, _ := c.Do(t.Context(), c.B().Pttl().Key(order).Build()).AsInt64()
	idx, _ := c.Do(t.Context(), c.B().Pttl().Key(srv.Layout().SearchDocs("alice", "s1")).Build()).AsInt64()
	if left <= 0 || idx <= 0 || idx > left+100 {
		t.Errorf("the session's messages have %d ms left, their index %d ms", left, idx)
	}
}

// The build's hash (agent_search_stats) that a search makes anew gets the
// TTL of the user's sessions: once another program removed it (or it ended
// before the user's marker, which still says the user has an index), the
// next search wrote it again without one, and no slide gives a key without
// a TTL one (EXPIRE GT), so it outlived every session of the user.
func TestSearchStatsMadeAnewGetsTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil) // on-demand: the first search makes the user's index
		post(t, h, `{"id":"a","role":"user","content":"apples from the orchard"}`, 201)
		find(t, h, "/v1/users/alice/search?", "orchard")
		c := srv.Client(t)
		stats := srv.Layout().SearchStats("alice")
		if err := c.Do(t.Context(), c.B().Del().Key(stats).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		find(t, h, "/v1/users/alice/search?", "orchard")
		if got, err := c.Do(t.Context(), c.B().Ttl().Key(stats).Build()).AsInt64(); err != nil || got <= 0 {
			t.Fatalf("%s made anew by a search: TTL %d (%v), want the session's", stats, got, err)
		}
	})
}
