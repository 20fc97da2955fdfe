package sessions_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
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
		_, err := st.Exec(t.Context(), sessions.SessionIndexBuild, "u1", "s1", "0", "qa")
		var ref *redisstore.Refusal
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), k.Index) {
			t.Fatalf("index build with the index a string: %v, want a refusal naming %s", err, k.Index)
		}
	})
}

// A count of the session's search index that another program spoiled (not
// a number: the entries' hash's ' n' and ' len') is left as it is, not
// failed on: an append and an entry delete are stored whole (it was a 500
// with the entry pushed and the record behind), and the entry is found.
func TestSpoiledSearchCountIsLeftAlone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := startSearch(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		c := srv.Client(t)
		b := "/v1/users/u1/sessions/s1"
		if r := h.Do(t, "POST", b+"/entries", `{"question":"what shrinks","answer":"costs","qa_id":"q0"}`); r.Status != 201 {
			t.Fatalf("first append: %d %s", r.Status, r.Body)
		}
		docs := srv.Layout().SearchEntryDocs("u1", "s1")
		c.Do(t.Context(), c.B().Hset().Key(docs).FieldValue().FieldValue(" n", "spoiled").FieldValue(" len", "spoiled too").Build())
		r := h.Do(t, "POST", b+"/entries", `{"question":"what grows","answer":"revenue","qa_id":"q1"}`)
		if r.Status != 201 {
			t.Fatalf("append with a spoiled count: %d %s, want 201", r.Status, r.Body)
		}
		if r := h.Do(t, "DELETE", b+"/entries/q0", ""); r.Status != 204 {
			t.Fatalf("entry delete with a spoiled count: %d %s, want 204", r.Status, r.Body)
		}
		got, _ := c.Do(t.Context(), c.B().Hmget().Key(docs).Field(" n", " len").Build()).AsStrSlice()
		if !slices.Equal(got, []string{"spoiled", "spoiled too"}) {
			t.Errorf("the spoiled counts: %q, want them left as they were", got)
		}
		k := srv.Layout().Session("u1", "s1")
		if got, _ := c.Do(t.Context(), c.B().Hget().Key(k.Record).Field("entry_count").Build()).ToString(); got != "1" {
			t.Errorf("record entry_count: %q, want 1", got)
		}
		if _, ids := hits(t, h, "/v1/users/u1/search?", "revenue"); ids != "s1/entry:q1" {
			t.Errorf("revenue: %q, want s1/entry:q1", ids)
		}
		if _, ids := hits(t, h, "/v1/users/u1/search?", "costs"); ids != "" {
			t.Errorf("costs (deleted): %q, want nothing", ids)
		}
	})
}

// With the search index on, an append that indexes checks the keys its
// document goes to before its first write: the session's entries' hash
// and the user's sessions list. Either of another type refuses it, 409
// key_wrong_type naming it, with nothing written: the entries, the record,
// the qa_id index, the event stream and the other search keys (the
// documents already indexed) are as they were, TTLs too. Once the key is
// gone the same append is stored, indexed and found, the index keys with
// a TTL.
func TestIndexedAppendChecksTheSearchKeys(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := startSearch(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		c := srv.Client(t)
		l := srv.Layout()
		for i, kind := range []string{"entries' hash", "sessions list"} {
			user := fmt.Sprintf("u%d", i+1)
			b := "/v1/users/" + user + "/sessions/s1"
			if r := h.Do(t, "POST", b+"/entries", `{"question":"alpha beta","answer":"gamma","qa_id":"q1"}`); r.Status != 201 {
				t.Fatalf("first append: %d %s", r.Status, r.Body)
			}
			docs, list := l.SearchEntryDocs(user, "s1"), l.SearchSessions(user)
			bad := []string{docs, list}[i]
			c.Do(t.Context(), c.B().Set().Key(bad).Value("someone else's").Build())
			k := l.Session(user, "s1")
			watched := []string{k.Entries, k.Record, k.Index, l.SessionEvents(user, "s1"), docs, list, l.SearchStats(user)}
			dump := func() []string { return redisstoretest.Snapshot(t, c, watched...) }
			before := dump()
			r := h.Do(t, "POST", b+"/entries", `{"question":"alpha beta delta zebra","answer":"","qa_id":"q2"}`)
			if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, bad) {
				t.Fatalf("append with the %s %s a string: %d %s, want 409 key_wrong_type naming it", kind, bad, r.Status, r.Body)
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
				t.Fatalf("append once the %s is gone: %d %s", kind, r.Status, r.Body)
			}
			// the session's search takes in what the index lacks (q1's
			// document, when the entries' hash went)
			if _, ids := hits(t, h, b+"/search?rank=relevance&", "zebra"); ids != "/entry:q2" {
				t.Errorf("zebra after the append: %q, want /entry:q2", ids)
			}
			if _, ids := hits(t, h, b+"/search?rank=relevance&", "alpha"); ids != "/entry:q1,/entry:q2" && ids != "/entry:q2,/entry:q1" {
				t.Errorf("alpha after the append: %q, want q1 and q2", ids)
			}
			if _, ids := hits(t, h, "/v1/users/"+user+"/search?", "zebra"); ids != "s1/entry:q2" {
				t.Errorf("zebra, user-wide: %q, want s1/entry:q2", ids)
			}
			for _, key := range []string{docs, list} {
				if pttl, _ := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64(); pttl <= 0 {
					t.Errorf("%s after the append: PTTL %d, want a TTL", key, pttl)
				}
			}
		}
	})
}
