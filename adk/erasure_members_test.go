package adk_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"

	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/erasure"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

// appIndexMembers are the members of the app's index (each order) in the
// bucket of user.
func appIndexMembers(t *testing.T, srv *redisstoretest.Server, appName, user string) map[string][]string {
	t.Helper()
	c := srv.Client(t)
	l := srv.Layout()
	out := map[string][]string{}
	for _, o := range []string{adk.OrderCreated, adk.OrderAsc, adk.OrderDesc} {
		k := l.BucketKey(adk.AppIndexFamily, l.Bucket(user), appName+":"+o)
		m, err := c.Do(t.Context(), c.B().Zrange().Key(k).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[k] = m
	}
	return out
}

// noMemberOf fails when the app's index holds a member of user.
func noMemberOf(t *testing.T, srv *redisstoretest.Server, appName, user string) {
	t.Helper()
	for k, ms := range appIndexMembers(t, srv, appName, user) {
		for _, m := range ms {
			if strings.HasSuffix(m, " "+user) {
				t.Errorf("%s holds %q after user %s's erasure", k, m, user)
			}
		}
	}
}

// A user's erasure takes every member of the user's ADK sessions out of
// the app's index across users, whatever became of the session: one with
// no expiry (PUT .../ttl 0: the index has none either), one whose keys
// Redis expired (its user's list still names it), and those of a user all
// of whose keys expired while another user's session keeps the index
// alive. Another user's member stays.
func TestErasureLeavesNoMemberInAppIndex(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, ttl.Factory, adk.Factory, erasure.Factory)
		c := srv.Client(t)
		unlink := func(keys ...string) {
			t.Helper()
			for _, k := range keys {
				if err := c.Do(t.Context(), c.B().Unlink().Key(k).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, u := range []string{"alice", "bob", "carol"} {
			want(t, h.Do(t, "POST", adkPath("weather", u), `{"session_id":"s1"}`), 201)
		}
		want(t, h.Do(t, "POST", adkPath("weather", "alice"), `{"session_id":"s2"}`), 201)
		want(t, h.Do(t, "POST", adkPath("weather", "alice"), `{"session_id":"s3"}`), 201)
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/"+adk.SidecarSession("weather", "s1")+"/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("ttl 0: %s", rep)
		}
		// alice's s3 expired (its keys gone, the sweep not run); every key
		// of carol's expired but the app's index, which bob's session keeps
		ks := adkKeys(srv, "weather", "alice", "s3")
		unlink(ks[0], ks[1], ks[2], ks[6], ks[7])
		ks = adkKeys(srv, "weather", "carol", "s1")
		unlink(ks[0], ks[1], ks[2], ks[3], ks[4], ks[6], ks[7], srv.Layout().UserMarker("carol"))
		for _, u := range []string{"alice", "carol"} {
			if rep := h.Do(t, "DELETE", "/v1/users/"+u, ""); rep.Status != 200 {
				t.Fatalf("erase %s: %s", u, rep)
			}
			noMemberOf(t, srv, "weather", u)
		}
		for k, ms := range appIndexMembers(t, srv, "weather", "bob") {
			if len(ms) != 1 || ms[0] != "s1 bob" {
				t.Errorf("%s after alice's and carol's erasure: %q, want bob's alone", k, ms)
			}
		}
	})
}

// An erasure in steps (USER_ERASE_STEPS_PER_CALL=1) sweeps an app's index
// far bigger than a step's budget, beside a metadata index across users:
// the user's members go from both, the 5 000 of other users stay.
func TestErasureSweepsBigAppIndexInSteps(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"USER_ERASE_STEPS_PER_CALL": "1"},
			sessions.Factory, ttl.Factory, adk.Factory, erasure.Factory)
		want(t, h.Do(t, "POST", adkPath("weather", "bob"), `{"session_id":"s1"}`), 201)
		c := srv.Client(t)
		l := srv.Layout()
		meta := l.MetaGlobal(l.Bucket("alice"), "env", "prod")
		var zadd, mzadd []string
		for i := range 5000 {
			zadd = append(zadd, strconv.Itoa(i), fmt.Sprintf("s%d u%d", i, i))
			mzadd = append(mzadd, strconv.Itoa(i), fmt.Sprintf("u%d:s", i))
		}
		zadd = append(zadd, "1", "x1 alice", "2500", "x2 alice", "6000", "x3 alice")
		mzadd = append(mzadd, "1", "alice:x1", "6000", "alice:x3")
		for _, o := range []string{adk.OrderCreated, adk.OrderAsc, adk.OrderDesc} {
			k := l.BucketKey(adk.AppIndexFamily, l.Bucket("alice"), "weather:"+o)
			if err := c.Do(t.Context(), c.B().Arbitrary("ZADD").Keys(k).Args(zadd...).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Do(t.Context(), c.B().Arbitrary("ZADD").Keys(meta).Args(mzadd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		steps := 0
		for {
			if steps++; steps > 10000 {
				t.Fatal("the erasure never finished")
			}
			r := h.Do(t, "DELETE", "/v1/users/alice", "")
			if r.Status == 200 {
				break
			}
			if r.Status != 202 {
				t.Fatalf("step %d: %s", steps, r)
			}
		}
		noMemberOf(t, srv, "weather", "alice")
		for k, ms := range appIndexMembers(t, srv, "weather", "alice") {
			if len(ms) != 5000+1 && !(len(ms) == 5000 && l.Bucket("alice") != l.Bucket("bob")) {
				t.Errorf("%s: %d members, want the 5 000 of other users (and bob's)", k, len(ms))
			}
		}
		if n, err := c.Do(t.Context(), c.B().Zcard().Key(meta).Build()).AsInt64(); err != nil || n != 5000 {
			t.Errorf("%s: %d members %v, want the 5 000 of other users", meta, n, err)
		}
	})
}
