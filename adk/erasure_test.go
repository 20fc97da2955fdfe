package adk_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/erasure"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

// A user's erasure (DELETE /v1/users/{u}) removes every ADK key of the
// user, the session's and the user's (their families are registered), and
// fences the user's ADK writes while it settles; the app's state, shared
// by every user, stays.
func TestUserErasureCoversADK(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, ttl.Factory, adk.Factory, erasure.Factory)
		s := want(t, h.Do(t, "POST", app, `{"session_id":"s1","state":{"k":1,"user:u":2,"app:a":3}}`), 201)
		want(t, h.Do(t, "POST", app+"/s1/events", appendBody("e1", s.LastUpdateTime+1, s.LastUpdateTime, `{"k":2}`)), 201)
		if rep := h.Do(t, "DELETE", "/v1/users/alice", ""); rep.Status != 200 {
			t.Fatalf("erase: %s", rep)
		}
		c := srv.Client(t)
		keys := adkKeys(srv, "weather", "alice", "s1")
		for _, k := range keys[:5] { // the session's and the user's
			if n, err := c.Do(t.Context(), c.B().Exists().Key(k).Build()).AsInt64(); err != nil || n != 0 {
				t.Errorf("%s after the user's erasure: exists %d %v", k, n, err)
			}
		}
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(keys[5]).Build()).AsInt64(); n != 1 {
			t.Errorf("the app's state %s went with one user's erasure", keys[5])
		}
		if rep := h.Do(t, "POST", app, `{"session_id":"s2"}`); rep.Status != 409 || rep.Code() != "user_erasing" {
			t.Errorf("an ADK write during the erasure's settling: %s", rep)
		}
		// the app's index across users: the erasure took the erased
		// sessions' members out (no listing needed), and none is listed
		l := srv.Layout()
		for _, o := range []string{adk.OrderCreated, adk.OrderAsc, adk.OrderDesc} {
			k := l.BucketKey(adk.AppIndexFamily, l.Bucket("alice"), "weather:"+o)
			if n, _ := c.Do(t.Context(), c.B().Zcard().Key(k).Build()).AsInt64(); n != 0 {
				t.Errorf("%s holds %d members after the erasure", k, n)
			}
		}
		if rep := h.Do(t, "GET", "/v1/adk/apps/weather/sessions", ""); rep.Status != 200 || !strings.Contains(rep.Body, `"sessions":[]`) {
			t.Errorf("the app's sessions after the erasure: %s", rep)
		}
	})
}
