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
// to a key without a TTL: they outlived every session of the user.
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
			l.MetaGlobal(l.Bucket("alice"), "pr", "42"),
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
			if got := pttl(t, srv, k); got == -1 {
				t.Errorf("PTTL of %s: none, though the user has no session left", k)
			}
		}
	})
}
