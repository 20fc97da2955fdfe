package adk_test

import (
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// every is a snapshot of every key of the (standalone) server.
func every(t *testing.T, srv *redisstoretest.Server) []string {
	t.Helper()
	c := srv.Client(t)
	ks, err := c.Do(t.Context(), c.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ks)
	return redisstoretest.Snapshot(t, c, ks...)
}

// refusedWrongType sends a write that must be 409 key_wrong_type with
// nothing written.
func refusedWrongType(t *testing.T, h *sidecartest.Host, srv *redisstoretest.Server, method, path, body string) {
	t.Helper()
	before := every(t, srv)
	if rep := h.Do(t, method, path, body); rep.Status != 409 || rep.Code() != "key_wrong_type" {
		t.Fatalf("%s %s %s: %s, want 409 key_wrong_type", method, path, body, rep)
	}
	if after := every(t, srv); !slices.Equal(after, before) {
		t.Fatalf("%s %s: a refused write changed Redis:\n%v\n%v", method, path, before, after)
	}
}

// A key an ADK write reads or writes that holds another type (another
// program wrote it) refuses the write, 409 key_wrong_type, with nothing
// written: the user's and the app's keys a create reads, the session's
// keys the first write that makes them. The keys are planted before the
// session first has them: the core trusts a session's own families once
// its record lists them (lib/session.lua), as it trusts the kept user keys.
func TestWrongTypesRefused(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		l := srv.Layout()
		set := func(k string) {
			t.Helper()
			if err := c.Do(t.Context(), c.B().Set().Key(k).Value("x").Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		del := func(k string) {
			t.Helper()
			if err := c.Do(t.Context(), c.B().Del().Key(k).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []string{
			l.UserKey(adk.UserStateFamily, "alice", "weather"),
			l.UserKey(adk.IndexFamily, "alice", "weather"),
			l.BucketKey(adk.AppIndexFamily, 0, "weather:"+adk.OrderCreated),
			l.BucketKey(adk.AppIndexFamily, 0, "weather:"+adk.OrderDesc),
			l.BucketKey(adk.AppStateFamily, 0, "weather"),
		} {
			set(k)
			refusedWrongType(t, h, srv, "POST", app, `{"session_id":"s1","state":{"k":1,"user:u":1,"app:a":1}}`)
			refusedWrongType(t, h, srv, "POST", app, `{"session_id":"s1"}`)
			del(k)
		}
		s := want(t, h.Do(t, "POST", app, `{"session_id":"s1"}`), 201)
		last := s.LastUpdateTime
		ev := app + "/s1/events"
		for _, k := range []string{
			l.SessionKey(adk.EventsFamily, "alice", "weather.s1"),
			l.SessionKey(adk.StateFamily, "alice", "weather.s1"),
		} {
			set(k)
			refusedWrongType(t, h, srv, "POST", ev, appendBody("e1", last+1, last, `{"k":1}`))
			del(k)
		}
		want(t, h.Do(t, "POST", ev, appendBody("e1", last+1, last, `{"k":1}`)), 201)
		// a read of a state of another type says so, rather than failing
		set(l.UserKey(adk.UserStateFamily, "alice", "weather"))
		if rep := h.Do(t, "GET", app+"/s1", ""); rep.Status != 409 || rep.Code() != "key_wrong_type" {
			t.Fatalf("GET with the user state of another type: %s", rep)
		}
		refusedWrongType(t, h, srv, "POST", ev, appendBody("e2", last+2, last+1, `{"user:u":1}`))
	})
}
