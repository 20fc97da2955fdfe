package registry_test

import (
	"fmt"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// alice is a host of the modules a user's TTLs involve (default TTL
// SESSION_TTL_SECONDS), and the calls of user alice these tests make.
type alice struct {
	t   *testing.T
	h   *sidecartest.Host
	srv *redisstoretest.Server
}

func newAlice(t *testing.T, srv *redisstoretest.Server, defaultTTL string) alice {
	h := sidecartest.Start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": defaultTTL},
		sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
	return alice{t, h, srv}
}

// do makes a call that must answer status.
func (a alice) do(method, path, body string, status int) {
	a.t.Helper()
	if rep := a.h.Do(a.t, method, "/v1/users/alice"+path, body); rep.Status != status {
		a.t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, rep.Status, rep.Body, status)
	}
}

// start starts session s, with metadata pr=<pr> unless pr is empty.
func (a alice) start(s, pr string) {
	a.t.Helper()
	meta := ""
	if pr != "" {
		meta = `,"metadata":{"pr":"` + pr + `"}`
	}
	a.do("POST", "/sessions", `{"session_id":"`+s+`"`+meta+`}`, 201)
}

func (a alice) state() { a.t.Helper(); a.do("PATCH", "/state", `{"plan":"pro"}`, 200) }
func (a alice) setTTL(s string, n int) {
	a.t.Helper()
	a.do("PUT", "/sessions/"+s+"/ttl", fmt.Sprintf(`{"ttl_seconds":%d}`, n), 200)
}
func (a alice) del(s string) { a.t.Helper(); a.do("DELETE", "/sessions/"+s, "", 204) }

func (a alice) stateKey() string { return a.srv.Layout().UserKey(registry.UserStateFamily, "alice") }
func (a alice) marker() string   { return a.srv.Layout().UserMarker("alice") }
func (a alice) index(pr string) string {
	return a.srv.Layout().MetaIndex("alice", "pr", pr)
}

// noTTL: each key exists without a TTL.
func (a alice) noTTL(why string, keys ...string) {
	a.t.Helper()
	for _, k := range keys {
		if got := pttl(a.t, a.srv, k); got != -1 {
			a.t.Errorf("PTTL of %s: %d ms, want none: %s", k, got, why)
		}
	}
}

// ttlWithin: each key exists with a TTL in (lo, hi] seconds.
func (a alice) ttlWithin(lo, hi int64, why string, keys ...string) {
	a.t.Helper()
	for _, k := range keys {
		if got := pttl(a.t, a.srv, k); got <= lo*1000 || got > hi*1000 {
			a.t.Errorf("PTTL of %s: %d ms, want in (%d s, %d s]: %s", k, got, lo, hi, why)
		}
	}
}

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
		a := newAlice(t, srv, "1000")
		a.start("s1", "42")
		a.state()
		a.setTTL("s1", 0)
		a.setTTL("s1", 60)
		a.do("POST", "/sessions/s1/entries", `{"question":"q","answer":"a"}`, 201)
		a.ttlWithin(0, 1000, "the only session of the user ends in 60 s", a.stateKey(), a.index("42"), a.marker())
	})
}

// The same when the session without expiry is deleted: no session of the
// user holds the user's keys without a TTL any more, yet they kept none.
func TestUserKeysGetATTLWhenThePersistedSessionIsDeleted(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := newAlice(t, srv, "1000")
		a.start("s1", "42")
		a.state()
		a.setTTL("s1", 0)
		a.del("s1")
		a.ttlWithin(0, 1000, "the user has no session left", a.stateKey(), a.marker())
	})
}

// Two sessions without expiry: the first getting a TTL again leaves the
// user's keys without one (the second still holds them: the marker counts
// it); the second's delete gives them back a TTL. A PUT .../ttl longer
// than the default is what they get then (the marker's ttl_max), so no
// idle session of the user outlives them.
func TestUserKeysKeepNoTTLWhileASessionHasNone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := newAlice(t, srv, "1000")
		a.start("s1", "42")
		a.start("s2", "42")
		a.state()
		a.setTTL("s1", 0)
		a.setTTL("s2", 0)
		a.setTTL("s1", 5000)
		a.noTTL("s2 has no expiry", a.stateKey())
		a.del("s2")
		a.ttlWithin(4000, 5000, "the last session without expiry went: s1's 5000 s", a.stateKey(), a.marker(), a.index("42"))
	})
}

// With SESSION_TTL_SECONDS=0 a session without a TTL of its own has no
// expiry: the user's keys it holds keep none, whatever another session of
// the user with a PUT .../ttl does. s2 given no expiry, then 100 s, must
// not hand the user's state (and the marker listing it) the 100 s while
// s1, which never expires, still uses them.
func TestUserKeysKeepNoTTLUnderTheDefaultOfNone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := newAlice(t, srv, "0")
		a.start("s1", "42")
		a.start("s2", "42")
		a.state()
		a.setTTL("s2", 0)
		a.setTTL("s2", 100)
		a.noTTL("s1 never expires (SESSION_TTL_SECONDS=0)", a.stateKey(), a.marker(), a.index("42"))
	})
}

// With SESSION_TTL_SECONDS=0 the user's marker, once it lists the user's
// kept keys, lives as long as they do (no expiry): a marker a PUT .../ttl
// made first (its ttl_max, with that TTL) must not expire with the list of
// the user's state, which s1, never expiring, still uses.
func TestMarkerListingKeysKeepsNoTTLUnderTheDefaultOfNone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := newAlice(t, srv, "0")
		a.start("s1", "42")
		a.start("s2", "42")
		a.setTTL("s2", 100)
		a.state()
		a.noTTL("s1 never expires (SESSION_TTL_SECONDS=0)", a.stateKey(), a.marker())
	})
}

// A kept key made while a session of the user has no expiry (the
// marker's persisted) keeps none either: s1, given no expiry, holds the
// user's state made after, which must not expire under it in
// SESSION_TTL_SECONDS while s1 idles; s1's delete then gives it a TTL.
func TestUserKeyMadeUnderAPersistedSessionKeepsNoTTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := newAlice(t, srv, "1000")
		a.start("s1", "")
		a.setTTL("s1", 0)
		a.state()
		a.noTTL("s1 has no expiry", a.stateKey())
		a.del("s1")
		a.ttlWithin(0, 1000, "the session without expiry went", a.stateKey())
	})
}

// A DELETE of a session without expiry whose record another program
// spoiled (a status the sidecar does not write: the delete goes on, it is
// the way out) still ends the marker's count of it: the user's keys get a
// TTL back, as after any other last session without expiry.
func TestSpoiledPersistedSessionDeleteGivesUserKeysATTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := newAlice(t, srv, "1000")
		a.start("s1", "")
		a.state()
		a.setTTL("s1", 0)
		c := srv.Client(t)
		if err := c.Do(t.Context(), c.B().Hset().Key(srv.Layout().Session("alice", "s1").Record).FieldValue().FieldValue("status", "bogus").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		a.del("s1")
		a.ttlWithin(0, 1000, "the user has no session left", a.stateKey(), a.marker())
	})
}

// Two sessions without expiry in different metadata indexes: the first
// goes while the second still has none, then the second goes. The index
// the first held (with s3, a session with a TTL, still in it) was
// PERSISTed by the first's slides and must get a TTL back once no session
// of the user is without expiry: s3's slides (EXPIRE GT) give none.
func TestIndexOfAnEarlierPersistedSessionGetsATTLBack(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := newAlice(t, srv, "1000")
		a.start("s1", "1")
		a.start("s3", "1")
		a.start("s2", "2")
		a.setTTL("s1", 0)
		a.setTTL("s2", 0)
		a.del("s1")
		a.del("s2")
		a.do("POST", "/sessions/s3/entries", `{"question":"q","answer":"a"}`, 201)
		a.ttlWithin(0, 1000, "no session of the user is without expiry", a.index("1"))
	})
}
