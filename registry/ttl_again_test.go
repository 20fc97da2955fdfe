package registry_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// A session that had no expiry (PUT .../ttl 0) and gets a TTL again (PUT
// .../ttl 60) no longer holds the user's keys without one: once it is the
// only session of the user, the user's state, its metadata indexes and the
// user's marker end with it. The persist took their TTL (PERSIST) and every
// later slide gives at least its TTL with EXPIRE GT, which never gives one
// to a key without a TTL: they outlived every session of the user. (The
// bucket's metadata index holds other users' sessions, perhaps without
// expiry: it keeps none, and the bookkeeping's prunes drop its members of
// sessions gone.)
func TestUserKeysGetATTLAgainAfterAPersistedSession(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","metadata":{"pr":"42"}}`), 201)
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		for _, body := range []string{`{"ttl_seconds":0}`, `{"ttl_seconds":60}`} {
			if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", body); rep.Status != 200 {
				t.Fatalf("ttl %s: %d %s", body, rep.Status, rep.Body)
			}
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/entries", `{"question":"q","answer":"a"}`); rep.Status != 201 {
			t.Fatalf("append: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{
			l.UserKey(registry.UserStateFamily, "alice"),
			l.MetaIndex("alice", "pr", "42"),
			l.UserMarker("alice"),
		} {
			if got := pttl(t, srv, k); got <= 0 || got > 1000*1000 {
				t.Errorf("PTTL of %s: %d ms, want at most 1000 s: the only session of the user ends in 60 s", k, got)
			}
		}
	})
}

// The same when the session without expiry is deleted: no session of the
// user holds the user's keys without a TTL any more, yet they kept none.
func TestUserKeysGetATTLWhenThePersistedSessionIsDeleted(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","metadata":{"pr":"42"}}`), 201)
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("ttl: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{
			l.UserKey(registry.UserStateFamily, "alice"),
			l.UserMarker("alice"),
		} {
			if got := pttl(t, srv, k); got <= 0 || got > 1000*1000 {
				t.Errorf("PTTL of %s: %d ms, want at most 1000 s: the user has no session left", k, got)
			}
		}
	})
}

// Two sessions without expiry: the first getting a TTL again leaves the
// user's keys without one (the second still holds them: the marker counts
// it); the second's delete gives them back a TTL. A PUT .../ttl longer
// than the default is what they get then (the marker's ttl_max), so no
// idle session of the user outlives them.
func TestUserKeysKeepNoTTLWhileASessionHasNone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		state := l.UserKey(registry.UserStateFamily, "alice")
		for _, s := range []string{"s1", "s2"} {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"`+s+`","metadata":{"pr":"42"}}`), 201)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		put := func(s, body string) {
			t.Helper()
			if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/"+s+"/ttl", body); rep.Status != 200 {
				t.Fatalf("ttl %s %s: %d %s", s, body, rep.Status, rep.Body)
			}
		}
		put("s1", `{"ttl_seconds":0}`)
		put("s2", `{"ttl_seconds":0}`)
		put("s1", `{"ttl_seconds":5000}`)
		if got := pttl(t, srv, state); got != -1 {
			t.Errorf("PTTL of %s: %d ms while s2 has no expiry, want none", state, got)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s2", ""); rep.Status != 204 {
			t.Fatalf("delete: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{state, l.UserMarker("alice"), l.MetaIndex("alice", "pr", "42")} {
			if got := pttl(t, srv, k); got < 4000*1000 || got > 5000*1000 {
				t.Errorf("PTTL of %s: %d ms after the last session without expiry went, want s1's 5000 s", k, got)
			}
		}
	})
}

// With SESSION_TTL_SECONDS=0 a session without a TTL of its own has no
// expiry: the user's keys it holds keep none, whatever another session of
// the user with a PUT .../ttl does. s2 given no expiry, then 100 s, must
// not hand the user's state (and the marker listing it) the 100 s while
// s1, which never expires, still uses them.
func TestUserKeysKeepNoTTLUnderTheDefaultOfNone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "0"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		for _, s := range []string{"s1", "s2"} {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"`+s+`","metadata":{"pr":"42"}}`), 201)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		for _, body := range []string{`{"ttl_seconds":0}`, `{"ttl_seconds":100}`} {
			if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s2/ttl", body); rep.Status != 200 {
				t.Fatalf("ttl %s: %d %s", body, rep.Status, rep.Body)
			}
		}
		for _, k := range []string{
			l.UserKey(registry.UserStateFamily, "alice"),
			l.UserMarker("alice"),
			l.MetaIndex("alice", "pr", "42"),
		} {
			if got := pttl(t, srv, k); got != -1 {
				t.Errorf("PTTL of %s: %d ms, want none: s1 never expires (SESSION_TTL_SECONDS=0)", k, got)
			}
		}
	})
}

// With SESSION_TTL_SECONDS=0 the user's marker, once it lists the user's
// kept keys, lives as long as they do (no expiry): a marker a PUT .../ttl
// made first (its ttl_max, with that TTL) must not expire with the list of
// the user's state, which s1, never expiring, still uses.
func TestMarkerListingKeysKeepsNoTTLUnderTheDefaultOfNone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "0"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		for _, s := range []string{"s1", "s2"} {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"`+s+`","metadata":{"pr":"42"}}`), 201)
		}
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s2/ttl", `{"ttl_seconds":100}`); rep.Status != 200 {
			t.Fatalf("ttl: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{l.UserKey(registry.UserStateFamily, "alice"), l.UserMarker("alice")} {
			if got := pttl(t, srv, k); got != -1 {
				t.Errorf("PTTL of %s: %d ms, want none: s1 never expires (SESSION_TTL_SECONDS=0)", k, got)
			}
		}
	})
}

// A kept key made while a session of the user has no expiry (the
// marker's persisted) keeps none either: s1, given no expiry, holds the
// user's state made after, which must not expire under it in
// SESSION_TTL_SECONDS while s1 idles; s1's delete then gives it a TTL.
func TestUserKeyMadeUnderAPersistedSessionKeepsNoTTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		state := l.UserKey(registry.UserStateFamily, "alice")
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1"}`), 201)
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("ttl: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		if got := pttl(t, srv, state); got != -1 {
			t.Errorf("PTTL of %s: %d ms while s1 has no expiry, want none", state, got)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete: %d %s", rep.Status, rep.Body)
		}
		if got := pttl(t, srv, state); got <= 0 || got > 1000*1000 {
			t.Errorf("PTTL of %s: %d ms after the session without expiry went, want at most 1000 s", state, got)
		}
	})
}

// A DELETE of a session without expiry whose record another program
// spoiled (a status the sidecar does not write: the delete goes on, it is
// the way out) still ends the marker's count of it: the user's keys get a
// TTL back, as after any other last session without expiry.
func TestSpoiledPersistedSessionDeleteGivesUserKeysATTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		state := l.UserKey(registry.UserStateFamily, "alice")
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1"}`), 201)
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"plan":"pro"}`); rep.Status != 200 {
			t.Fatalf("user state: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("ttl: %d %s", rep.Status, rep.Body)
		}
		c := srv.Client(t)
		if err := c.Do(t.Context(), c.B().Hset().Key(l.Session("alice", "s1").Record).FieldValue().FieldValue("status", "bogus").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{state, l.UserMarker("alice")} {
			if got := pttl(t, srv, k); got <= 0 || got > 1000*1000 {
				t.Errorf("PTTL of %s: %d ms, want at most 1000 s: the user has no session left", k, got)
			}
		}
	})
}

// Two sessions without expiry in different metadata indexes: the first
// goes while the second still has none, then the second goes. The index
// the first held (with s3, a session with a TTL, still in it) was
// PERSISTed by the first's slides and must get a TTL back once no session
// of the user is without expiry: s3's slides (EXPIRE GT) give none.
func TestIndexOfAnEarlierPersistedSessionGetsATTLBack(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1000"},
			sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		for _, s := range []string{"s1", "s3"} {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"`+s+`","metadata":{"pr":"1"}}`), 201)
		}
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s2","metadata":{"pr":"2"}}`), 201)
		for _, s := range []string{"s1", "s2"} {
			if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/"+s+"/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
				t.Fatalf("ttl %s: %d %s", s, rep.Status, rep.Body)
			}
		}
		for _, s := range []string{"s1", "s2"} {
			if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/"+s, ""); rep.Status != 204 {
				t.Fatalf("delete %s: %d %s", s, rep.Status, rep.Body)
			}
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s3/entries", `{"question":"q","answer":"a"}`); rep.Status != 201 {
			t.Fatalf("append: %d %s", rep.Status, rep.Body)
		}
		k := l.MetaIndex("alice", "pr", "1")
		if got := pttl(t, srv, k); got <= 0 || got > 1000*1000 {
			t.Errorf("PTTL of %s: %d ms, want at most 1000 s: no session of the user is without expiry", k, got)
		}
	})
}
