package messages_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// Second fresh-eyes review of the per-session search index: each test
// reproduces a defect on a real redis-server.

// A write that finds the session's messages index spoiled (a ' seq' that
// is no number) drops the whole hash (search.current) and indexes only its
// own document: the session's other messages come back through the
// catch-up the write queues. Once no catch-up was queued and a user-wide
// search never found them again.
func TestMessagesSpoiledIndexComesBack(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	c := srv.Client(t)
	h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
	post(t, h, `{"id":"m1","role":"user","content":"the walrus sleeps"}`, 201)
	if got := find(t, h, "/v1/users/alice/search?", "walrus"); len(got) != 1 {
		t.Fatalf("walrus before: %+v", got)
	}
	docs := srv.Layout().SearchDocs("alice", "s1")
	c.Do(t.Context(), c.B().Hset().Key(docs).FieldValue().FieldValue(" seq", "x").Build())
	post(t, h, `{"id":"m2","role":"user","content":"the narwhal swims"}`, 201)
	if !foundSoon(t, h, "walrus", "m1") || !foundSoon(t, h, "narwhal", "m2") {
		t.Error("the session's messages are not all found after the index was dropped")
	}
}

// foundSoon: a user-wide search for q finds message id within about 2 s
// (the catch-up runs in the background).
func foundSoon(t *testing.T, h *sidecartest.Host, q, id string) bool {
	t.Helper()
	for range 100 {
		for _, g := range find(t, h, "/v1/users/alice/search?", q) {
			if g.ID == id {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
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
	left, _ := c.Do(t.Context(), c.B().Pttl().Key(order).Build()).AsInt64()
	idx, _ := c.Do(t.Context(), c.B().Pttl().Key(srv.Layout().SearchDocs("alice", "s1")).Build()).AsInt64()
	if left <= 0 || idx <= 0 || idx > left {
		t.Errorf("the session's messages have %d ms left, their index %d ms", left, idx)
	}
}
