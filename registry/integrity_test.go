package registry_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// pttl is the PTTL of key (-1 no expiry, -2 no key).
func pttl(t *testing.T, srv *redisstoretest.Server, key string) int64 {
	t.Helper()
	c := srv.Client(t)
	n, err := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("pttl %s: %v", key, err)
	}
	return n
}

// A metadata index lives as long as the longest-lived session it holds: a
// session with no expiry (PUT .../ttl 0) keeps its indexes without one,
// whatever sessions with a TTL later join them. Otherwise the index expires
// under the persisted session, which the filter then never finds again.
func TestMetadataIndexOfAPersistedSessionDoesNotExpire(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		user, global := l.MetaIndex("alice", "pr", "42"), l.MetaGlobal(l.Bucket("alice"), "pr", "42")
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"kept","metadata":{"pr":"42"}}`), 201)
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/kept/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("ttl: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{user, global} {
			if got := pttl(t, srv, k); got != -1 {
				t.Fatalf("PTTL of %s after the persist: %d, want -1", k, got)
			}
		}
		// Sessions with the default TTL join the same indexes: by creation,
		// by a metadata PATCH, by start-or-reuse, by any later write.
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"other","metadata":{"pr":"42"}}`), 201)
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"late"}`), 201)
		want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/late", `{"metadata":{"pr":"42"}}`), 200)
		activeSession(t, h, "alice", `{"match":{"pr":"42"}}`, 200)
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/other/entries", `{"question":"q","answer":"a"}`); rep.Status != 201 {
			t.Fatalf("append: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{user, global} {
			if got := pttl(t, srv, k); got != -1 {
				t.Errorf("PTTL of %s: %d, want -1: the index would expire under session kept, which never does", k, got)
			}
		}
	})
}

// The user's state is a user-level key: it slides with any write of the
// user, so it cannot expire while the user's sessions are being written.
func TestUserStateSlidesWithTheUsersWrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"})
		l := srv.Layout()
		key := l.UserKey(registry.UserStateFamily, "alice")
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		c := srv.Client(t)
		for i, w := range []struct{ method, path, body string }{
			{"POST", "/v1/users/alice/sessions/s1/entries", `{"question":"q","answer":"a"}`},
			{"POST", "/v1/users/alice/sessions/s2/usage", `{"model":"gpt-4o","tokens_in":1}`},
			{"POST", "/v1/users/alice/sessions", `{"session_id":"s3"}`},
		} {
			// As if most of the TTL had passed since the state was written.
			if err := c.Do(t.Context(), c.B().Pexpire().Key(key).Milliseconds(5000).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if rep := h.Do(t, w.method, w.path, w.body); rep.Status != 201 {
				t.Fatalf("%s %s: %d %s", w.method, w.path, rep.Status, rep.Body)
			}
			if got := pttl(t, srv, key); got <= 5000 || got > 1000*1000 {
				t.Errorf("write %d (%s %s): the user state's PTTL is %d ms, want the session TTL (1000 s) again", i, w.method, w.path, got)
			}
		}
	})
}

// A merge patch names keys as JSON does: "\u0061" is the key "a". The
// stored state never holds one key twice (JSON the sidecar itself refuses
// with 400 duplicate_field), and null removes the key however it is spelt.
func TestStateMergePatchMatchesKeysByValue(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","state":{"a":1,"b":{"c":1}}}`), 201)
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"a":1,"b":{"c":1}}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		for _, path := range []string{"/v1/users/alice/sessions/s1/state", "/v1/users/alice/state"} {
			for _, s := range []struct{ patch, want string }{
				{`{"\u0061":2}`, `{"a":2,"b":{"c":1}}`},
				{`{"b":{"\u0063":null,"d":2}}`, `{"a":2,"b":{"d":2}}`},
				{`{"\u0061":null}`, `{"b":{"d":2}}`},
			} {
				rep := h.Do(t, "PATCH", path, s.patch)
				if rep.Status != 200 || strings.TrimSpace(rep.Body) != s.want {
					t.Fatalf("PATCH %s %s: %d %s, want %s", path, s.patch, rep.Status, rep.Body, s.want)
				}
			}
			// What GET answers can be sent back as it is.
			got := strings.TrimSpace(h.Do(t, "GET", path, "").Body)
			if rep := h.Do(t, "POST", "/v1/users/alice/sessions", `{"state":`+got+`}`); rep.Status != 201 {
				t.Errorf("the stored state %s sent back: %d %s", got, rep.Status, rep.Body)
			}
		}
	})
}

// A registry write that meets a key of the wrong type (another program
// wrote it) is a 409 key_wrong_type naming it, and writes nothing: every
// check comes before the first write (Redis does not roll back). The
// session core writes the lifecycle indexes (running sets, expiry set)
// only with its bookkeeping, which is due when a session starts (the
// create, the start that finds no session to reuse) and then once a grain:
// the PATCHes of s1 here, within the grain, do not write them, so they do
// not meet them (they did when every write wrote them).
func TestRegistryWritesRefuseWrongTypedKeysBeforeAnyWrite(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		c := srv.Client(t)
		dump := func() []string {
			keys, err := c.Do(t.Context(), c.B().Keys().Pattern("*").Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(keys)
			var out []string
			for _, k := range keys {
				typ, _ := c.Do(t.Context(), c.B().Type().Key(k).Build()).ToString()
				var v any
				switch typ {
				case "hash":
					v, _ = c.Do(t.Context(), c.B().Hgetall().Key(k).Build()).AsStrMap()
				case "zset":
					v, _ = c.Do(t.Context(), c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).ToAny()
				case "string":
					v, _ = c.Do(t.Context(), c.B().Get().Key(k).Build()).ToString()
				}
				out = append(out, fmt.Sprintf("%s %s %v", k, typ, v))
			}
			return out
		}
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","title":"t","metadata":{"pr":"1"},"state":{"a":1}}`), 201)
		for _, tc := range []struct {
			name, key string
			only      []int // the writes below that write it (nil: all)
		}{
			{"the user's running index", l.UserIndex("alice")[0], []int{0, 3}},
			{"the bucket's running index", l.Session("alice", "s1").GlobalIndex[0], []int{0, 3}},
			{"the expiry set", l.Session("alice", "s1").Expiry, []int{0, 3}},
			{"a metadata index", l.MetaIndex("alice", "pr", "2"), []int{0, 1, 3}},
		} {
			c.Do(t.Context(), c.B().Del().Key(tc.key).Build())
			if err := c.Do(t.Context(), c.B().Set().Key(tc.key).Value("someone else's").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			before := dump()
			for i, w := range []struct{ method, path, body string }{
				{"POST", "/v1/users/alice/sessions", `{"session_id":"s2","metadata":{"pr":"2"},"state":{"a":1}}`},
				{"PATCH", "/v1/users/alice/sessions/s1", `{"title":"new","metadata":{"pr":"2"}}`},
				{"PATCH", "/v1/users/alice/sessions/s1/state", `{"a":2}`},
				{"POST", "/v1/users/alice/active-session", `{"match":{"pr":"2"}}`},
			} {
				if tc.only != nil && !slices.Contains(tc.only, i) {
					continue
				}
				r := h.Do(t, w.method, w.path, w.body)
				if r.Status != 409 || r.Code() != "key_wrong_type" {
					t.Errorf("%s %s with %s a string: %d %s, want 409 key_wrong_type", w.method, w.path, tc.name, r.Status, r.Body)
				}
				if after := dump(); !slices.Equal(after, before) {
					t.Errorf("%s %s with %s a string changed Redis:\n%q\nwas\n%q", w.method, w.path, tc.name, after, before)
				}
			}
			c.Do(t.Context(), c.B().Del().Key(tc.key).Build())
		}
	})
}

// Start-or-reuse with a match finds the user's matching session however
// many sessions of other agents of the user were active since: a user
// whose other agents ran 300 sessions after this agent's still gets this
// agent's session back, not a second one.
func TestActiveSessionFindsItsMatchAmongManyOthers(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		first := activeSession(t, h, "alice", `{"match":{"agent":"x"}}`, 201)
		for i := range 300 {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", fmt.Sprintf(`{"session_id":"o%d","metadata":{"agent":"o%d"}}`, i, i)), 201)
		}
		if again := activeSession(t, h, "alice", `{"match":{"agent":"x"}}`, 200); again.SessionID != first.SessionID {
			t.Fatalf("start-or-reuse gave %s, want the running session %s", again.SessionID, first.SessionID)
		}
	})
}

// Start-or-reuse drops the expired sessions it meets in the match's
// metadata index (user's and bucket's): the expiry sweep cleans only the
// status indexes, so an index that no filtered listing reads would
// otherwise keep every session that ever held the pair.
func TestActiveSessionDropsExpiredMembersItMeets(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		user, global := l.MetaIndex("alice", "agent", "x"), l.MetaGlobal(l.Bucket("alice"), "agent", "x")
		first := activeSession(t, h, "alice", `{"match":{"agent":"x"}}`, 201)
		c := srv.Client(t)
		for i := range 5 { // sessions that expired after their last activity, newer than first's
			dead := fmt.Sprintf("dead%d", i)
			for _, cmd := range []rueidis.Completed{
				c.B().Zadd().Key(user).ScoreMember().ScoreMember(9e15, dead).Build(),
				c.B().Zadd().Key(global).ScoreMember().ScoreMember(9e15, "alice:"+dead).Build(),
			} {
				if err := c.Do(t.Context(), cmd).Error(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if again := activeSession(t, h, "alice", `{"match":{"agent":"x"}}`, 200); again.SessionID != first.SessionID {
			t.Fatalf("reused %s, want %s", again.SessionID, first.SessionID)
		}
		if got := members(t, srv, user); !slices.Equal(got, []string{first.SessionID}) {
			t.Errorf("user index after start-or-reuse: %v, want only %s", got, first.SessionID)
		}
		if got := members(t, srv, global); !slices.Equal(got, []string{"alice:" + first.SessionID}) {
			t.Errorf("bucket index after start-or-reuse: %v, want only alice:%s", got, first.SessionID)
		}
	})
}

// The writes of other modules to a session with metadata check its
// metadata indexes before their first write too: a usage post, an append
// and a complete meet the wrong-typed index as a 409, with nothing written.
// The session core writes the indexes with its bookkeeping, due once a
// grain (and on a status change): each write here comes past the grain
// (within it, a write neither writes nor meets them).
func TestSessionWritesCheckTheMetadataIndexesFirst(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, abandonFast)
		l := srv.Layout()
		c := srv.Client(t)
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","metadata":{"team":"a"}}`), 201)
		key := l.MetaIndex("alice", "team", "a")
		c.Do(t.Context(), c.B().Del().Key(key).Build())
		if err := c.Do(t.Context(), c.B().Set().Key(key).Value("someone else's").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		record := func() map[string]string { return hash(t, srv, l.Session("alice", "s1").Record) }
		before := record()
		for _, w := range []struct{ path, body string }{
			{"/usage", `{"model":"gpt-4o","tokens_in":10}`},
			{"/entries", `{"question":"q","answer":"a"}`},
			{"/complete", ``},
		} {
			pastGrain(t, srv)
			r := h.Do(t, "POST", "/v1/users/alice/sessions/s1"+w.path, w.body)
			if r.Status != 409 || r.Code() != "key_wrong_type" {
				t.Errorf("POST %s with the metadata index a string: %d %s, want 409 key_wrong_type", w.path, r.Status, r.Body)
			}
			if after := record(); !maps.Equal(after, before) {
				t.Errorf("POST %s changed the record:\n%v\nwas\n%v", w.path, after, before)
			}
		}
	})
}

// A metadata index that is written but never read does not keep members of
// expired sessions: every sliding write of a session in it examines its two
// least recently active members against the expiry set and drops the dead
// ones, while a live session without expiry (TTL 0) stays.
func TestWritesPruneExpiredMembersOfTheirMetadataIndexes(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		user, global := l.MetaIndex("alice", "team", "x"), l.MetaGlobal(l.Bucket("alice"), "team", "x")
		c := srv.Client(t)
		for i := range 5 { // sessions that expired long ago (no expiry entry left)
			dead := fmt.Sprintf("dead%d", i)
			for _, cmd := range []rueidis.Completed{
				c.B().Zadd().Key(user).ScoreMember().ScoreMember(float64(i+1), dead).Build(),
				c.B().Zadd().Key(global).ScoreMember().ScoreMember(float64(i+1), "alice:"+dead).Build(),
			} {
				if err := c.Do(t.Context(), cmd).Error(); err != nil {
					t.Fatal(err)
				}
			}
		}
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"keep","metadata":{"team":"x"}}`), 201)
		want(t, h.Do(t, "PUT", "/v1/users/alice/sessions/keep/ttl", `{"ttl_seconds":0}`), 200)
		for _, s := range []string{"s1", "s2", "s3"} {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"`+s+`","metadata":{"team":"x"}}`), 201)
		}
		wantUser := []string{"keep", "s1", "s2", "s3"}
		if got := members(t, srv, user); !slices.Equal(sorted(got), wantUser) {
			t.Errorf("user index: %v, want %v (the dead members pruned, keep kept)", got, wantUser)
		}
		if got := members(t, srv, global); len(got) != 4 || slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, "dead") }) {
			t.Errorf("bucket index: %v, want the four live sessions", got)
		}
	})
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// Start-or-reuse reads the messages of each abandoned session it closes
// (for the auto-summary): a message key of another type there is a 409
// key_wrong_type before any write, not a Redis error after the sessions
// closed before it were already closed.
func TestActiveSessionAutoCloseRefusesWrongTypedMessageKeysFirst(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, abandonFast)
		l := srv.Layout()
		c := srv.Client(t)
		for _, s := range []string{"s1", "s2"} { // s2 is the newer: closed first
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions/"+s+"/entries", `{"question":"q","answer":"a","context":""}`), 201)
		}
		idle(t, srv)
		for _, key := range []string{l.SessionKey(redisstore.MessageOrderFamily, "alice", "s1"), l.SessionKey(redisstore.MessagesFamily, "alice", "s1")} {
			if err := c.Do(t.Context(), c.B().Set().Key(key).Value("someone else's").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			keys, err := c.Do(t.Context(), c.B().Keys().Pattern("*").Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			before := redisstoretest.Snapshot(t, c, keys...)
			if r := h.Do(t, "POST", "/v1/users/alice/active-session", `{}`); r.Status != 409 || r.Code() != "key_wrong_type" {
				t.Errorf("start-or-reuse with %s a string: %d %s, want 409 key_wrong_type", key, r.Status, r.Body)
			}
			if after := redisstoretest.Snapshot(t, c, keys...); !slices.Equal(after, before) {
				t.Errorf("start-or-reuse with %s a string changed Redis:\n%q\nwas\n%q", key, after, before)
			}
			c.Do(t.Context(), c.B().Del().Key(key).Build())
		}
	})
}

// Ending the active session drops the expired members it met in the
// match's metadata indexes (user's and bucket's) even when it finds none
// to end: a bucket index of another type there is a 409 key_wrong_type
// before any write, not a Redis error after the user's index was written.
func TestActiveEndRefusesAWrongTypedBucketIndexFirst(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		c := srv.Client(t)
		user, global := l.MetaIndex("alice", "agent", "x"), l.MetaGlobal(l.Bucket("alice"), "agent", "x")
		for _, cmd := range []rueidis.Completed{
			c.B().Zadd().Key(user).ScoreMember().ScoreMember(9e15, "dead").Build(), // an expired session's
			c.B().Set().Key(global).Value("someone else's").Build(),
		} {
			if err := c.Do(t.Context(), cmd).Error(); err != nil {
				t.Fatal(err)
			}
		}
		before := redisstoretest.Snapshot(t, c, user, global)
		if r := h.Do(t, "POST", "/v1/users/alice/active-session/end", `{"match":{"agent":"x"}}`); r.Status != 409 || r.Code() != "key_wrong_type" {
			t.Errorf("end with the bucket index a string: %d %s, want 409 key_wrong_type", r.Status, r.Body)
		}
		if after := redisstoretest.Snapshot(t, c, user, global); !slices.Equal(after, before) {
			t.Errorf("end with the bucket index a string changed Redis:\n%q\nwas\n%q", after, before)
		}
	})
}

// Creating a session with an initial state refuses a state key of another
// type (another program wrote it) with 409 key_wrong_type and writes
// nothing, as a state PATCH does, instead of replacing that key.
func TestCreateRefusesAWrongTypedStateKey(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		c := srv.Client(t)
		key := l.SessionKey(registry.SessionStateFamily, "alice", "s1")
		if err := c.Do(t.Context(), c.B().Hset().Key(key).FieldValue().FieldValue("theirs", "1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		before := redisstoretest.Snapshot(t, c, key, l.Session("alice", "s1").Record, l.SessionEvents("alice", "s1"))
		if r := h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","state":{"a":1}}`); r.Status != 409 || r.Code() != "key_wrong_type" {
			t.Errorf("create with the state key a hash: %d %s, want 409 key_wrong_type", r.Status, r.Body)
		}
		if after := redisstoretest.Snapshot(t, c, key, l.Session("alice", "s1").Record, l.SessionEvents("alice", "s1")); !slices.Equal(after, before) {
			t.Errorf("create with the state key a hash changed Redis:\n%q\nwas\n%q", after, before)
		}
	})
}

// checkUnreadableState stores each of a few values that are not a JSON
// object (as another program might) in the session's and the user's state
// keys, sends method to the state's route, and wants 409 state_unreadable
// with the key left as it was.
func checkUnreadableState(t *testing.T, method, body string) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		c := srv.Client(t)
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1"}`); rep.Status != 201 {
			t.Fatalf("create: %s", rep)
		}
		for _, stored := range []string{"not json", "[1,2]", `{"a":`, `"x"`} {
			for key, path := range map[string]string{
				l.SessionKey(registry.SessionStateFamily, "alice", "s1"): "/v1/users/alice/sessions/s1/state",
				l.UserKey(registry.UserStateFamily, "alice"):             "/v1/users/alice/state",
			} {
				if err := c.Do(t.Context(), c.B().Set().Key(key).Value(stored).Build()).Error(); err != nil {
					t.Fatal(err)
				}
				if rep := h.Do(t, method, path, body); rep.Status != 409 || rep.Code() != "state_unreadable" {
					t.Errorf("%s %s holding %q: %s, want 409 state_unreadable", method, path, stored, rep)
				}
				if got, _ := c.Do(t.Context(), c.B().Get().Key(key).Build()).ToString(); got != stored {
					t.Errorf("%s holds %q after the %s, want %q", key, got, method, stored)
				}
			}
		}
	})
}

// A stored state another program wrote that is not a JSON object (not
// JSON at all, or an array) is not answered as if it were the state: both
// reads answer 409 state_unreadable and leave it as it is.
func TestUnreadableStateIsRefusedOnRead(t *testing.T) { checkUnreadableState(t, "GET", "") }

// A PATCH over a stored state that is not a JSON object answers 409
// state_unreadable and writes nothing: the merge would otherwise take it
// as no state and overwrite what another program stored.
func TestUnreadableStateIsNotPatched(t *testing.T) {
	checkUnreadableState(t, "PATCH", `{"a":1}`)
}

// A session that joins a metadata index by a PATCH gives the index at
// least its own TTL at once, though its bookkeeping is not due (the core
// slides its keys once a grain): an index that a short-lived session made
// does not expire under it; and a session without expiry that joins one
// leaves it without expiry.
func TestMetadataIndexJoinedGetsTheSessionsTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"}, sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		c := srv.Client(t)
		user, global := l.MetaIndex("alice", "pr", "7"), l.MetaGlobal(l.Bucket("alice"), "pr", "7")
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"short","metadata":{"pr":"7"}}`), 201)
		for _, k := range []string{user, global} {
			if got := pttl(t, srv, k); got <= 0 || got > 1000*1000 {
				t.Fatalf("PTTL of %s made by the create: %d, want the session's 1000 s", k, got)
			}
			// as if the sessions it holds were about to expire
			if err := c.Do(t.Context(), c.B().Pexpire().Key(k).Milliseconds(5000).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"long"}`), 201)
		want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/long", `{"metadata":{"pr":"7"}}`), 200)
		for _, k := range []string{user, global} {
			if got := pttl(t, srv, k); got <= 5000 || got > 1000*1000 {
				t.Errorf("PTTL of %s after session long joined it: %d ms, want long's 1000 s", k, got)
			}
		}
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"kept"}`), 201)
		want(t, h.Do(t, "PUT", "/v1/users/alice/sessions/kept/ttl", `{"ttl_seconds":0}`), 200)
		want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/kept", `{"metadata":{"pr":"7"}}`), 200)
		for _, k := range []string{user, global} {
			if got := pttl(t, srv, k); got != -1 {
				t.Errorf("PTTL of %s after session kept (no expiry) joined it: %d, want -1", k, got)
			}
		}
	})
}
