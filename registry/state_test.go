package registry_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

func TestSessionStateMergePatch(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","state":{"a":1, "keep":[]}}`), 201)
		steps := []struct{ patch, want string }{
			{`{}`, `{"a":1,"keep":[]}`},
			{`{"a":null,"b":{"c":[],"n":null}}`, `{"keep":[],"b":{"c":[]}}`},
			{`{"b":{"d":1.0000000000000001,"e":"\u00e9/"}}`, `{"keep":[],"b":{"c":[],"d":1.0000000000000001,"e":"\u00e9/"}}`},
			{`{"b":7}`, `{"keep":[],"b":7}`},
		}
		for _, s := range steps {
			rep := h.Do(t, "PATCH", "/v1/users/alice/sessions/s1/state", s.patch)
			if rep.Status != 200 || strings.TrimSpace(rep.Body) != s.want {
				t.Fatalf("patch %s: %d %s, want %s", s.patch, rep.Status, rep.Body, s.want)
			}
		}
		if got := str(t, srv, l.SessionKey(registry.SessionStateFamily, "alice", "s1")); got != steps[len(steps)-1].want {
			t.Errorf("stored state %q", got)
		}
		// It is one of the session's keys: it has the session's TTL.
		c := srv.Client(t)
		if ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(l.SessionKey(registry.SessionStateFamily, "alice", "s1")).Build()).AsInt64(); ttl <= 0 {
			t.Errorf("state TTL %d", ttl)
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1/state", ""); rep.Status != 200 || strings.TrimSpace(rep.Body) != steps[len(steps)-1].want {
			t.Errorf("GET: %d %s", rep.Status, rep.Body)
		}
		// A session without state reads {}; an unknown one is 404.
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions/s2/entries", `{"question":"q","answer":"a","context":""}`), 201)
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s2/state", ""); rep.Status != 200 || strings.TrimSpace(rep.Body) != "{}" {
			t.Errorf("GET without state: %d %s", rep.Status, rep.Body)
		}
		for _, m := range []string{"GET", "PATCH"} {
			if rep := h.Do(t, m, "/v1/users/alice/sessions/nope/state", `{"a":1}`); rep.Status != 404 {
				t.Errorf("%s unknown: %d %s", m, rep.Status, rep.Body)
			}
		}
		// Bad patches: 400, nothing written.
		before := str(t, srv, l.SessionKey(registry.SessionStateFamily, "alice", "s1"))
		big := `{"x":"` + strings.Repeat("x", registry.MaxStateBytes-100) + `"}`
		bigState := strings.TrimSpace(h.Do(t, "PATCH", "/v1/users/alice/sessions/s1/state", big).Body)
		for _, c := range []string{
			`[1]`, `"x"`,
			strings.Repeat(`{"a":`, 33) + `1` + strings.Repeat(`}`, 33),
			`{"y":"` + strings.Repeat("y", 200) + `"}`, // the merged state would pass 64 KiB
		} {
			if rep := h.Do(t, "PATCH", "/v1/users/alice/sessions/s1/state", c); rep.Status != 400 {
				t.Errorf("patch %.40s: %d %s", c, rep.Status, rep.Body)
			}
		}
		if after := str(t, srv, l.SessionKey(registry.SessionStateFamily, "alice", "s1")); after != bigState || before == after {
			t.Errorf("state after refused patches: %d bytes", len(after))
		}
	})
}

// Concurrent patches of different keys lose nothing.
func TestSessionStateConcurrent(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		hosts := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		want(t, hosts[0].Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1"}`), 201)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if rep := hosts[i%2].Do(t, "PATCH", "/v1/users/alice/sessions/s1/state", fmt.Sprintf(`{"k%d":%d}`, i, i)); rep.Status != 200 {
					t.Errorf("patch %d: %d %s", i, rep.Status, rep.Body)
				}
			})
		}
		wg.Wait()
		var got map[string]int
		hosts[1].Do(t, "GET", "/v1/users/alice/sessions/s1/state", "").JSON(t, &got)
		if len(got) != 20 {
			t.Errorf("state %v: want 20 keys", got)
		}
	})
}

func TestUserState(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		if rep := h.Do(t, "GET", "/v1/users/alice/state", ""); rep.Status != 200 || strings.TrimSpace(rep.Body) != "{}" {
			t.Fatalf("empty: %d %s", rep.Status, rep.Body)
		}
		rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"lang":"fr","prefs":{"units":"metric"}}`)
		rep = h.Do(t, "PATCH", "/v1/users/alice/state", `{"prefs":{"units":null,"tz":"CET"}}`)
		if rep.Status != 200 || strings.TrimSpace(rep.Body) != `{"lang":"fr","prefs":{"tz":"CET"}}` {
			t.Fatalf("patch: %d %s", rep.Status, rep.Body)
		}
		c := srv.Client(t)
		key := srv.Layout().UserKey(registry.UserStateFamily, "alice")
		stored, _ := c.Do(t.Context(), c.B().Get().Key(key).Build()).ToString()
		ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64()
		if stored != strings.TrimSpace(rep.Body) || ttl <= 0 {
			t.Errorf("stored %q ttl %d", stored, ttl)
		}
		var v map[string]any
		if json.Unmarshal([]byte(h.Do(t, "GET", "/v1/users/alice/state", "").Body), &v) != nil || v["lang"] != "fr" {
			t.Errorf("GET: %v", v)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `[]`); rep.Status != 400 {
			t.Errorf("array patch: %d", rep.Status)
		}
	})
}

// A user event stream of another type refuses a user state patch before
// anything is written (the patch's event could not be added).
func TestUserStateRefusedByWrongTypedUserStream(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		if err := c.Do(t.Context(), c.B().Set().Key(srv.Layout().UserEvents("alice")).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/state", `{"a":1}`); rep.Status != 409 || rep.Code() != "key_wrong_type" {
			t.Errorf("PATCH: %d %s, want 409 key_wrong_type", rep.Status, rep.Body)
		}
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(srv.Layout().UserKey(registry.UserStateFamily, "alice")).Build()).AsInt64(); n != 0 {
			t.Error("the state was written before the refusal")
		}
	})
}

// The examples of RFC 7396, appendix A, whose target and patch are objects.
func TestStateRFC7396Examples(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		for i, c := range []struct{ target, patch, want string }{
			{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
			{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
			{`{"a":"b"}`, `{"a":null}`, `{}`},
			{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
			{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
			{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
			{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
			{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
			{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
			{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		} {
			s := fmt.Sprintf("s%d", i)
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"`+s+`","state":`+c.target+`}`), 201)
			rep := h.Do(t, "PATCH", "/v1/users/alice/sessions/"+s+"/state", c.patch)
			if rep.Status != 200 || strings.TrimSpace(rep.Body) != c.want {
				t.Errorf("%s + %s: %d %s, want %s", c.target, c.patch, rep.Status, rep.Body, c.want)
			}
		}
	})
}

func str(t *testing.T, srv *redisstoretest.Server, key string) string {
	t.Helper()
	c := srv.Client(t)
	v, _ := c.Do(t.Context(), c.B().Get().Key(key).Build()).ToString()
	return v
}

// Deleting a session deletes its state; PUT .../ttl applies to it.
func TestSessionStateFollowsTheSession(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		l := srv.Layout()
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","state":{"a":1}}`), 201)
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("ttl: %d %s", rep.Status, rep.Body)
		}
		c := srv.Client(t)
		if ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(l.SessionKey(registry.SessionStateFamily, "alice", "s1")).Build()).AsInt64(); ttl != -1 {
			t.Errorf("state TTL after persist: %d", ttl)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete: %d", rep.Status)
		}
		if v := str(t, srv, l.SessionKey(registry.SessionStateFamily, "alice", "s1")); v != "" {
			t.Errorf("state after delete: %q", v)
		}
	})
}
