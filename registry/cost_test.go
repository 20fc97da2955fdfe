package registry_test

import (
	"fmt"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// The Redis commands of a registry write on a session within the core's
// grain (its bookkeeping not due), counted by Redis itself: a title PATCH,
// a metadata PATCH that moves the session from one pair's indexes to
// another's, and a start-or-reuse that reuses a session. Events are
// recorded (SESSION_EVENTS=always: an XADD and a PUBLISH each).
func TestWriteCosts(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	conn := redisstoretest.OpenReady(t, srv.Options())
	// a week's TTL: the grain is 60 s (lua/lib/lifecycle.lua, grain)
	store := &registry.Store{Store: sessionstore.New(conn, sessionstore.Config{TTLSeconds: 7 * 86400, AbandonAfterSeconds: 1800})}
	c := srv.Client(t)
	ctx := t.Context()
	if _, err := store.Create(ctx, "alice", "s1", registry.NewSession{Metadata: `{"a":"1"}`}); err != nil {
		t.Fatal(err)
	}
	first, err := store.Active(ctx, "alice", registry.Start{Metadata: `{"agent":"x"}`, Match: `{"agent":"x"}`})
	if err != nil || !first.New {
		t.Fatal(first, err)
	}
	slid := func(session string) string {
		t.Helper()
		v, err := c.Do(ctx, c.B().Hget().Key(srv.Layout().Session("alice", session).Record).Field("slid_at").Build()).ToString()
		if err != nil {
			t.Fatalf("slid_at of %s: %v", session, err)
		}
		return v
	}
	for _, w := range []struct {
		name, session string
		max           int64
		run           func() error
	}{
		{"title PATCH", "s1", 6, func() error { return store.Update(ctx, "alice", "s1", registry.Update{Title: "set", TitleValue: "t"}) }},
		{"metadata PATCH a=1 to a=2", "s1", 14, func() error { return store.Update(ctx, "alice", "s1", registry.Update{MetaSet: `{"a":"2"}`}) }},
		{"start-or-reuse, reused", first.SessionID, 8, func() error {
			got, err := store.Active(ctx, "alice", registry.Start{Match: `{"agent":"x"}`})
			if err == nil && (got.New || got.SessionID != first.SessionID) {
				err = fmt.Errorf("not reused: %+v", got)
			}
			return err
		}},
	} {
		before := slid(w.session)
		got := redisstoretest.CommandsOf(t, c, func() {
			if err := w.run(); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
		})
		t.Logf("%s: %s", w.name, got)
		if slid(w.session) != before {
			// a machine so slow that a minute passed since the session's
			// last bookkeeping: this write did it too
			t.Logf("%s: the bookkeeping was due; not counted", w.name)
			continue
		}
		if got.Total > w.max {
			t.Errorf("%s ran %s, want at most %d commands", w.name, got, w.max)
		}
	}
}
