package messages_test

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// A search index key of another type (another program wrote it) refuses
// every write that would index there, 409 key_wrong_type naming it, before
// the script's first write: the message, the tree, the record and every
// other key unchanged. The keys: the session's documents hash (a split's
// or fork's is its new session's), and the user's list of sessions
// holding documents (agent_search_sessions).
func TestSearchIndexKeyWrongType(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		l, c := srv.Layout(), srv.Client(t)
		for _, tc := range []struct {
			user string
			bad  []string // the keys made strings
			// the key each write is refused for: the session's, or the new
			// session's (split, fork)
			own, other string
		}{
			{"alice", []string{l.SearchDocs("alice", "s1"), l.SearchDocs("alice", "s2")},
				l.SearchDocs("alice", "s1"), l.SearchDocs("alice", "s2")},
			{"bob", []string{l.SearchSessions("bob")}, l.SearchSessions("bob"), l.SearchSessions("bob")},
		} {
			base := "/v1/users/" + tc.user + "/sessions/"
			msgs := base + "s1/messages"
			if rep := h.Do(t, "POST", msgs, `{"id":"m0","role":"user","content":"hello"}`); rep.Status != 201 {
				t.Fatal(rep)
			}
			for _, key := range tc.bad {
				if err := c.Do(t.Context(), c.B().Set().Key(key).Value("x").Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			all := srv.Keys(t, "*")
			sort.Strings(all)
			was := redisstoretest.Snapshot(t, c, all...)
			writes := []struct{ method, path, body, key string }{
				{"POST", msgs, `{"id":"m1","role":"user","content":"zebra"}`, tc.own},
				{"PUT", msgs + "/m2", `{"role":"user","content":"zebra"}`, tc.own},
				{"PUT", msgs + "/m0", `{"role":"user","content":"zebra"}`, tc.own},
				{"PATCH", msgs + "/m0", `{"content":"zebra"}`, tc.own},
				{"POST", base + "s1/split", `{"summary":"zebra","session_id":"s2"}`, tc.other},
				// (a fork writes no document: the catch-up indexes the new
				// session's messages, and is refused then)
			}
			for _, w := range writes {
				r := h.Do(t, w.method, w.path, w.body)
				if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, w.key) {
					t.Errorf("%s %s: got %s, want 409 key_wrong_type naming %s", w.method, w.path, r, w.key)
				}
			}
			now := srv.Keys(t, "*")
			sort.Strings(now)
			if got := redisstoretest.Snapshot(t, c, now...); !slices.Equal(got, was) {
				t.Fatalf("%s: the refused writes changed Redis:\n %q\nwant\n %q", tc.user, got, was)
			}
			rep := h.Do(t, "GET", msgs, "")
			var p page
			rep.JSON(t, &p)
			if rep.Status != 200 || p.Total != 1 || len(p.Messages) != 1 || p.Messages[0].ID != "m0" || *p.Messages[0].Content != "hello" {
				t.Fatalf("%s after the refusals: got %s, want only m0 unchanged", tc.user, rep)
			}
			for _, id := range []string{"m1", "m2"} {
				if rep := h.Do(t, "GET", msgs+"/"+id, ""); rep.Status != 404 {
					t.Errorf("GET %s after the refusals: got %s, want 404", id, rep)
				}
			}
			if rep := h.Do(t, "GET", base+"s1", ""); !strings.Contains(rep.Body, `"message_count":1`) || !strings.Contains(rep.Body, `"status":"running"`) {
				t.Fatalf("record: got %s, want running, message_count 1", rep)
			}
			if rep := h.Do(t, "GET", base+"s2", ""); rep.Status != 404 {
				t.Fatalf("continuation: got %s, want 404", rep)
			}
		}
	})
}

// A session's index whose ' seq' another program spoiled (not a number)
// fails no write half-way: the put and the append answer as always, the
// put's message replaced once, and the index is made anew with their
// documents (the catch-up takes the rest in again), with the session's
// TTL (once it was made again without one, outliving its session).
func TestIndexSeqSpoiled(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		post(t, h, `{"id":"m0","role":"user","content":"hello walrus"}`, 201)
		c, docs := srv.Client(t), srv.Layout().SearchDocs("alice", "s1")
		for _, seq := range []string{"x", "99999999999999999999"} {
			if err := c.Do(t.Context(), c.B().Hset().Key(docs).FieldValue().FieldValue(" seq", seq).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if rep := h.Do(t, "PUT", msgs+"/m0", `{"role":"user","content":"zebra `+seq+`"}`); rep.Status != 200 {
				t.Fatalf("PUT with ' seq' %s: %s", seq, rep)
			}
			if ttl, err := c.Do(t.Context(), c.B().Ttl().Key(docs).Build()).AsInt64(); err != nil || ttl <= 0 {
				t.Fatalf("%s made anew by the PUT: TTL %d (%v), want the session's", docs, ttl, err)
			}
			if got := hitIDs(find(t, h, "/v1/users/alice/search?", "zebra")); got != "s1/m0" {
				t.Fatalf("zebra after the PUT: got %q, want s1/m0", got)
			}
		}
		if err := c.Do(t.Context(), c.B().Hset().Key(docs).FieldValue().FieldValue(" seq", "x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		post(t, h, `{"id":"m1","role":"user","content":"pears"}`, 201)
		if got := hitIDs(find(t, h, "/v1/users/alice/search?", "pears")); got != "s1/m1" {
			t.Fatalf("pears: got %q, want s1/m1", got)
		}
		if got := hitIDs(find(t, h, "/v1/users/alice/search?", "walrus")); got != "" {
			t.Fatalf("walrus: got %q, want the replaced words gone", got)
		}
		p := path(t, h, "")
		if ids(p) != "m0,m1" || *p.Messages[0].Content != "zebra 99999999999999999999" {
			t.Fatalf("path: %+v", p)
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1", ""); !strings.Contains(rep.Body, `"message_count":2`) {
			t.Fatalf("record: got %s, want message_count 2", rep)
		}
	})
}

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
