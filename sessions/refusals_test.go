package sessions_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// The append and the entry edit check a key's type by their own first
// command on it (locate's reads, the event's XADD as the first write).
// Only a wrong type is their refusal: through EVALSHA (an ACL user without
// Functions), where Redis checks memory at a script's first write, a
// Redis over maxmemory answers 503 redis_oom, not 409 key_wrong_type, and
// readiness reports it.
func TestFirstWriteRefusalsKeepRedisErrors(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	if reply, err := redisstoretest.RawCommand(srv.Addr, "ACL SETUSER evalonly on >pw ~* &* +@all -function -fcall -fcall_ro", 5*time.Second); err != nil || reply != "+OK" {
		t.Fatalf("ACL SETUSER: %q %v", reply, err)
	}
	h := sidecartest.StartURL(t, "redis://evalonly:pw@"+srv.Addr+"/0", nil, sessions.Factory)
	sidecartest.NewClient(t, h.Ops).WaitServing(t, "/readyz", 10*time.Second)
	b := "/v1/users/u1/sessions/s1"
	if r := h.Do(t, "POST", b+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`); r.Status != 201 {
		t.Fatalf("append before: %d %s", r.Status, r.Body)
	}
	raw := srv.Client(t)
	set := func(k, v string) {
		t.Helper()
		if err := raw.Do(t.Context(), raw.B().ConfigSet().ParameterValue().ParameterValue(k, v).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	set("maxmemory-policy", "noeviction")
	set("maxmemory", "1")
	for _, w := range []struct{ method, path, body string }{
		{"POST", b + "/entries", `{"question":"q","answer":"a","qa_id":"q2"}`},
		{"POST", "/v1/users/u1/sessions/new/entries", `{"question":"q","answer":"a","qa_id":"q1"}`},
		{"PUT", b + "/entries/q1/feedback", `{"feedback_score":3}`},
		{"PATCH", b + "/entries/q1", `{"answer":"b"}`},
	} {
		if r := h.Do(t, w.method, w.path, w.body); r.Status != 503 || r.Code() != "redis_oom" {
			t.Errorf("%s %s over maxmemory: %d %s, want 503 redis_oom", w.method, w.path, r.Status, r.Body)
		}
	}
	if r := sidecartest.Do(t, "GET", h.Ops+"/readyz", ""); r.Status != 503 || !strings.Contains(r.Body, "out of memory") {
		t.Errorf("readyz over maxmemory: %d %s", r.Status, r.Body)
	}
	set("maxmemory", "0")
	if r := h.Do(t, "POST", b+"/entries", `{"question":"q","answer":"a","qa_id":"q2"}`); r.Status != 201 {
		t.Fatalf("append after: %d %s", r.Status, r.Body)
	}
}

// A step of index building refuses an index of another type (the step
// answered "complete" for it).
func TestIndexBuildRefusesAWrongTypedIndex(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		st := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
		c := srv.Client(t)
		k := srv.Layout().Session("u1", "s1")
		c.Do(t.Context(), c.B().Rpush().Key(k.Entries).Element(`{"qa_id": "a", "time": "2026-01-01T00:00:00"}`).Build())
		c.Do(t.Context(), c.B().Set().Key(k.Index).Value("someone else's").Build())
		_, err := st.Exec(t.Context(), lua.SessionIndexBuild, "u1", "s1", "qa")
		var ref *redisstore.Refusal
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), k.Index) {
			t.Fatalf("index build with the index a string: %v, want a refusal naming %s", err, k.Index)
		}
	})
}

// A count in the user's search statistics that another program spoiled
// (not a number) is left as it is, not failed on: the append is stored
// whole (it was a 500 with the entry pushed and the record behind).
func TestSpoiledSearchCountIsLeftAlone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory)
		c := srv.Client(t)
		stats := srv.Layout().SearchStats("u1")
		c.Do(t.Context(), c.B().Hset().Key(stats).FieldValue().FieldValue("n", "spoiled").Build())
		r := h.Do(t, "POST", "/v1/users/u1/sessions/s1/entries", `{"question":"what grows","answer":"revenue","qa_id":"q1"}`)
		if r.Status != 201 {
			t.Fatalf("append with a spoiled count: %d %s, want 201", r.Status, r.Body)
		}
		if got, _ := c.Do(t.Context(), c.B().Hget().Key(stats).Field("n").Build()).ToString(); got != "spoiled" {
			t.Errorf("the spoiled count: %q, want it left as it was", got)
		}
		k := srv.Layout().Session("u1", "s1")
		if got, _ := c.Do(t.Context(), c.B().Hget().Key(k.Record).Field("entry_count").Build()).ToString(); got != "1" {
			t.Errorf("record entry_count: %q, want 1", got)
		}
	})
}

// With the search index on, the append's postings are its first writes,
// each ZADD checking its key's type: a postings key of another type (its
// term in the entry, after others) refuses the append, 409 key_wrong_type
// naming it, and every posting added before it is taken back: the other
// terms' postings, the entries, the event stream, the documents and the
// user's statistics are as they were.
func TestAppendPostingsRefusalTakesBackItsPostings(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"}, sessions.Factory)
		c := srv.Client(t)
		l := srv.Layout()
		b := "/v1/users/u1/sessions/s1"
		if r := h.Do(t, "POST", b+"/entries", `{"question":"alpha beta","answer":"gamma","qa_id":"q1"}`); r.Status != 201 {
			t.Fatalf("first append: %d %s", r.Status, r.Body)
		}
		bad := l.SearchPostings("u1", "zebra")
		c.Do(t.Context(), c.B().Set().Key(bad).Value("someone else's").Build())
		k := l.Session("u1", "s1")
		watched := []string{k.Entries, k.Record, l.SessionEvents("u1", "s1"), l.SearchEntryDocs("u1", "s1"), l.SearchStats("u1"),
			l.SearchPostings("u1", "alpha"), l.SearchPostings("u1", "beta"), l.SearchPostings("u1", "delta"), bad}
		dump := func() []string { return redisstoretest.Snapshot(t, c, watched...) }
		before := dump()
		// alpha and beta exist, delta is new, zebra refuses: words in order
		r := h.Do(t, "POST", b+"/entries", `{"question":"alpha beta delta zebra","answer":"","qa_id":"q2"}`)
		if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, bad) {
			t.Fatalf("append with %s a string: %d %s, want 409 key_wrong_type naming it", bad, r.Status, r.Body)
		}
		if after := dump(); !slices.Equal(after, before) {
			for i := range after {
				if after[i] != before[i] {
					t.Errorf("the refused append changed %s:\n%q\nwas\n%q", watched[i], after[i], before[i])
				}
			}
			t.FailNow()
		}
		c.Do(t.Context(), c.B().Del().Key(bad).Build())
		if r := h.Do(t, "POST", b+"/entries", `{"question":"alpha beta delta zebra","answer":"","qa_id":"q2"}`); r.Status != 201 {
			t.Fatalf("append once the key is gone: %d %s", r.Status, r.Body)
		}
		for _, term := range []string{"alpha", "delta", "zebra"} {
			key := l.SearchPostings("u1", term)
			if pttl, _ := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64(); pttl <= 0 {
				t.Errorf("%s after the append: PTTL %d, want a TTL", key, pttl)
			}
		}
		members, _ := c.Do(t.Context(), c.B().Zrange().Key(bad).Min("0").Max("-1").Build()).AsStrSlice()
		if len(members) != 1 || !strings.Contains(members[0], "\tq2\t") {
			t.Fatalf("postings of zebra: %q, want q2's", members)
		}
	})
}

// With the search index on (the default), the append's documents hash and
// the user's statistics of another type refuse it before anything is
// written: no entry, no posting of its words.
func TestIndexedAppendChecksTheSearchKeys(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"}, sessions.Factory)
		c := srv.Client(t)
		l := srv.Layout()
		for i, key := range []string{l.SearchStats("u1"), l.SearchEntryDocs("u2", "s1")} {
			user := []string{"u1", "u2"}[i]
			b := "/v1/users/" + user + "/sessions/s1/entries"
			if r := h.Do(t, "POST", b, `{"question":"alpha","answer":"","qa_id":"q1"}`); r.Status != 201 {
				t.Fatalf("first append: %d %s", r.Status, r.Body)
			}
			c.Do(t.Context(), c.B().Set().Key(key).Value("someone else's").Build())
			r := h.Do(t, "POST", b, `{"question":"omega","answer":"","qa_id":"q2"}`)
			if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, key) {
				t.Errorf("append with %s a string: %d %s, want 409 key_wrong_type naming it", key, r.Status, r.Body)
			}
			n, _ := c.Do(t.Context(), c.B().Llen().Key(l.Session(user, "s1").Entries).Build()).AsInt64()
			p, _ := c.Do(t.Context(), c.B().Exists().Key(l.SearchPostings(user, "omega")).Build()).AsInt64()
			if n != 1 || p != 0 {
				t.Errorf("after the refusal with %s a string: %d entries, omega's postings exist %d; want 1, 0", key, n, p)
			}
		}
	})
}

// A posting already there with the member an append would add (its
// version repeated) is left as it was when the append is refused later:
// the take-back removes only what the append added.
func TestPostingsTakeBackKeepsWhatWasThere(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"}, sessions.Factory)
		c := srv.Client(t)
		l := srv.Layout()
		b := "/v1/users/u1/sessions/s1"
		if r := h.Do(t, "POST", b+"/entries", `{"question":"alpha","answer":"","qa_id":"q1"}`); r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		v, _ := c.Do(t.Context(), c.B().Hget().Key(l.SearchEntryDocs("u1", "s1")).Field(" v").Build()).AsInt64()
		alpha := l.SearchPostings("u1", "alpha")
		member := fmt.Sprintf("s1\tentry\tq2\t%d\t1\t2", v+1) // what q2's posting of alpha would be
		c.Do(t.Context(), c.B().Zadd().Key(alpha).ScoreMember().ScoreMember(5, member).Build())
		c.Do(t.Context(), c.B().Set().Key(l.SearchPostings("u1", "zebra")).Value("someone else's").Build())
		if r := h.Do(t, "POST", b+"/entries", `{"question":"alpha zebra","answer":"","qa_id":"q2"}`); r.Status != 409 {
			t.Fatalf("append with zebra's postings a string: %d %s, want 409", r.Status, r.Body)
		}
		if s, err := c.Do(t.Context(), c.B().Zscore().Key(alpha).Member(member).Build()).AsFloat64(); err != nil || s != 5 {
			t.Errorf("the posting that was there: score %v (%v), want 5", s, err)
		}
	})
}
