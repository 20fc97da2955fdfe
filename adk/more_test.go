package adk_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// ADK's stale-session check is what keeps concurrent writers from losing
// each other's state: 16 writers on two sidecars each add 1 to a counter
// in the session's state (read the session, append an event with the new
// value; on 409 stale_session read again). Every increment survives and
// the session holds exactly one event per successful append.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		hosts := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		want(t, hosts[0].Do(t, "POST", app, `{"session_id":"race","state":{"count":0}}`), 201)
		const writers, each = 16, 5
		var wg sync.WaitGroup
		var mu sync.Mutex
		var stale int
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				c := sidecartest.NewClient(t, hosts[w%2].API)
				for i := 0; i < each; {
					rep := c.Send(t.Context(), "GET", app+"/race?num_recent_events=1", "")
					if rep.Err != nil || rep.Status != 200 {
						errs <- fmt.Errorf("get: %v", rep)
						return
					}
					var s session
					if err := json.Unmarshal([]byte(rep.Body), &s); err != nil {
						errs <- err
						return
					}
					var n int
					_ = json.Unmarshal(s.State["count"], &n)
					body := appendBody(fmt.Sprintf("w%d-%d", w, i), s.LastUpdateTime+1, s.LastUpdateTime, fmt.Sprintf(`{"count":%d,"user:last":%d,"app:last":%d}`, n+1, w, w))
					rep = c.Send(t.Context(), "POST", app+"/race/events", body)
					switch {
					case rep.Err != nil:
						errs <- rep.Err
						return
					case rep.Status == 201:
						i++
					case rep.Status == 409 && rep.Code() == "stale_session":
						mu.Lock()
						stale++
						mu.Unlock()
					default:
						errs <- errors.New(rep.String())
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		s := want(t, hosts[1].Do(t, "GET", app+"/race?limit=1000", ""), 200)
		if string(s.State["count"]) != strconv.Itoa(writers*each) || s.EventCount != writers*each || len(s.Events) != writers*each {
			t.Fatalf("count %s, %d events (%d read), want %d of each; %d stale refusals", s.State["count"], s.EventCount, len(s.Events), writers*each, stale)
		}
		t.Logf("%d appends, %d refused as stale and retried", writers*each, stale)
	})
}

// The session's ADK keys are the session's: the stock PUT .../ttl slides
// them and the stock session delete removes them; the listing then drops
// the session.
func TestStockTTLAndDeleteCoverADKKeys(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		s := want(t, h.Do(t, "POST", app, `{"session_id":"s1","state":{"k":1}}`), 201)
		want(t, h.Do(t, "POST", app+"/s1/events", appendBody("e1", s.LastUpdateTime+1, s.LastUpdateTime, `{"k":2}`)), 201)
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/weather.s1/ttl", `{"ttl_seconds":100}`); rep.Status != 200 {
			t.Fatalf("PUT ttl: %s", rep)
		}
		c := srv.Client(t)
		l := srv.Layout()
		own := []string{l.SessionKey(adk.SessionFamily, "alice", "weather.s1"), l.SessionKey(adk.StateFamily, "alice", "weather.s1"), l.SessionKey(adk.EventsFamily, "alice", "weather.s1")}
		for _, k := range own {
			if p, err := c.Do(t.Context(), c.B().Pttl().Key(k).Build()).AsInt64(); err != nil || p <= 0 || p > 100_000 {
				t.Fatalf("PTTL %s = %d %v, want the session's 100 s", k, p, err)
			}
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/weather.s1", ""); rep.Status != 204 {
			t.Fatalf("DELETE session: %s", rep)
		}
		for _, k := range own {
			if n, err := c.Do(t.Context(), c.B().Exists().Key(k).Build()).AsInt64(); err != nil || n != 0 {
				t.Fatalf("%s after the session's delete: exists %d %v", k, n, err)
			}
		}
		want(t, h.Do(t, "GET", app+"/s1", ""), 404)
		if rep := h.Do(t, "GET", app, ""); rep.Status != 200 || strings.TrimSpace(rep.Body) != `{"sessions":[],"page":1,"limit":0,"total_items":0,"total_pages":0}` {
			t.Fatalf("list after delete: %s", rep)
		}
	})
}

// Bad input is 400 with nothing written; the limits answer their codes.
func TestRefusals(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"ADK_MAX_EVENTS": "2", "ADK_MAX_STATE_BYTES": "1024", "ADK_MAX_SESSIONS": "2"})
		s := want(t, h.Do(t, "POST", app, `{"session_id":"s1"}`), 201)
		last := s.LastUpdateTime
		ev := app + "/s1/events"
		for _, tc := range []struct{ body, code string }{
			{`{"event":[],"last_update_time":1}`, "invalid_field"},
			{`{"event":{"timestamp":"x"},"last_update_time":1}`, "invalid_field"},
			{`{"event":{"id":5,"timestamp":1},"last_update_time":1}`, "invalid_field"},
			{`{"event":{"timestamp":1},"last_update_time":"1"}`, "invalid_field"},
			{`{"event":{"timestamp":1}}`, "invalid_field"},
			{`{"event":{"timestamp":1},"last_update_time":1,"state_delta":{"":1}}`, "invalid_field"},
			{`{"event":{"timestamp":1},"last_update_time":1,"nope":1}`, "unknown_field"},
			{`{"event":{"timestamp":null},"last_update_time":1e15}`, "invalid_field"}, // a fresh copy: would store null
			{`{"event":{"timestamp":1},"last_update_time":null}`, "invalid_field"},
		} {
			if rep := h.Do(t, "POST", ev, tc.body); rep.Status != 400 || rep.Code() != tc.code {
				t.Errorf("%s: %s, want 400 %s", tc.body, rep, tc.code)
			}
		}
		big := `{"big":"` + fmt.Sprintf("%01100d", 0) + `"}`
		if rep := h.Do(t, "POST", ev, appendBody("e0", last+1, last, big)); rep.Status != 409 || rep.Code() != "state_too_big" {
			t.Fatalf("a state past ADK_MAX_STATE_BYTES: %s", rep)
		}
		want(t, h.Do(t, "POST", ev, appendBody("e1", last+1, last, `{}`)), 201)
		want(t, h.Do(t, "POST", ev, appendBody("e2", last+2, last+1, `{}`)), 201)
		if rep := h.Do(t, "POST", ev, appendBody("e3", last+3, last+2, `{}`)); rep.Status != 409 || rep.Code() != "session_full" {
			t.Fatalf("past ADK_MAX_EVENTS: %s", rep)
		}
		want(t, h.Do(t, "POST", ev, appendBody("e2", last+3, last+2, `{}`)), 201) // a replacement still fits
		want(t, h.Do(t, "POST", app, `{"session_id":"s2"}`), 201)
		if rep := h.Do(t, "POST", app, `{"session_id":"s3"}`); rep.Status != 409 || rep.Code() != "too_many_sessions" {
			t.Fatalf("past ADK_MAX_SESSIONS: %s", rep)
		}
		want(t, h.Do(t, "DELETE", app+"/s2", ""), 204)
		want(t, h.Do(t, "POST", app, `{"session_id":"s3"}`), 201)
		for _, q := range []string{"num_recent_events=-1", "limit=0", "limit=1001", "after_timestamp=x"} {
			if rep := h.Do(t, "GET", app+"/s1?"+q, ""); rep.Status != 400 || rep.Code() != "invalid_query" {
				t.Errorf("GET ?%s: %s", q, rep)
			}
		}
		// A cursor this API did not answer, however it looks.
		for _, c := range []string{"5", "1:2", "5:3", sidecar.EncodeCursor("1", "2"), sidecar.EncodeCursor("5"), sidecar.EncodeCursor("5", "3", "1"), sidecar.EncodeCursor("x", "1")} {
			if rep := h.Do(t, "GET", app+"/s1?cursor="+c, ""); rep.Status != 400 || rep.Code() != "invalid_cursor" {
				t.Errorf("GET ?cursor=%s: %s", c, rep)
			}
		}
		if rep := h.Do(t, "GET", app+"?order=up", ""); rep.Status != 400 || rep.Code() != "invalid_query" {
			t.Errorf("list ?order=up: %s", rep)
		}
	})
}

// A read does work for what it returns, not for what the session holds: on
// a session of 3 000 events, numRecentEvents=3, an afterTimestamp that
// keeps 5, and a 50-event page each read a handful of fields (counted by
// Redis itself).
func TestBoundedReads(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	s := want(t, h.Do(t, "POST", app, `{"session_id":"big"}`), 201)
	c := srv.Client(t)
	last := s.LastUpdateTime
	const n = 3000
	for i := range n {
		want(t, h.Do(t, "POST", app+"/big/events", appendBody(fmt.Sprintf("e%d", i), float64(i+1), last, `{}`)), 201)
		last = float64(i + 1)
	}
	for _, tc := range []struct {
		query       string
		events, max int
	}{
		{"num_recent_events=3", 3, 3*3 + 4},
		{"after_timestamp=2995.5", 5, 6*3 + 4},
		{"limit=50", 50, 50*3 + 4},
	} {
		if err := c.Do(t.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		g := want(t, h.Do(t, "GET", app+"/big?"+tc.query, ""), 200)
		if len(g.Events) != tc.events {
			t.Fatalf("?%s: %d events, want %d", tc.query, len(g.Events), tc.events)
		}
		if got := calls(t, c, "hget") + calls(t, c, "hstrlen"); got > tc.max {
			t.Errorf("?%s read %d event fields, want at most %d", tc.query, got, tc.max)
		}
	}
}

func calls(t *testing.T, c rueidis.Client, cmd string) int {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	k, _ := strconv.Atoi(m[1])
	return k
}

// A session's `user:` state, its member of the user's list and of the
// app's index across users live at least as long as the session: PUT
// .../ttl raising the session's TTL, or making it never expire, moves them
// too, else they would expire first and listSessions would lose a living
// session for good.
func TestStockTTLKeepsUserKeys(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "100"})
		want(t, h.Do(t, "POST", app, `{"session_id":"s1","state":{"user:u":1}}`), 201)
		c := srv.Client(t)
		l := srv.Layout()
		user := []string{l.UserKey(adk.UserStateFamily, "alice", "weather"), l.UserKey(adk.IndexFamily, "alice", "weather")}
		for _, o := range []string{adk.OrderCreated, adk.OrderAsc, adk.OrderDesc} {
			user = append(user, l.BucketKey(adk.AppIndexFamily, l.Bucket("alice"), "weather:"+o))
		}
		for _, tc := range []struct {
			body    string
			atLeast int64 // ms; -1: no expiry
		}{{`{"ttl_seconds":100000}`, 99_000_000}, {`{"ttl_seconds":0}`, -1}} {
			if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/weather.s1/ttl", tc.body); rep.Status != 200 {
				t.Fatalf("PUT ttl: %s", rep)
			}
			for _, k := range user {
				p, err := c.Do(t.Context(), c.B().Pttl().Key(k).Build()).AsInt64()
				if err != nil || (tc.atLeast == -1 && p != -1) || (tc.atLeast > 0 && p < tc.atLeast) {
					t.Errorf("after PUT ttl %s: PTTL %s = %d %v, want at least the session's (%d)", tc.body, k, p, err, tc.atLeast)
				}
			}
		}
	})
}

// Each state holds at most adk.MaxStateKeys keys, whatever their bytes: a
// getSession reads the three states whole in one script, so their key
// count, not only their bytes, bounds its work. A delta past it is 409
// state_too_big with nothing written; changing a key it holds is not.
func TestStateKeysBounded(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		for _, prefix := range []string{"", "user:", "app:"} {
			sid := "s" + strings.TrimSuffix(prefix, ":")
			var b strings.Builder
			for i := range adk.MaxStateKeys {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"%sk%d":1`, prefix, i)
			}
			s := want(t, h.Do(t, "POST", app, `{"session_id":"`+sid+`","state":{`+b.String()+`}}`), 201)
			ev := app + "/" + sid + "/events"
			last := s.LastUpdateTime
			rep := h.Do(t, "POST", ev, appendBody("e1", last+1, last, `{"`+prefix+`new":1}`))
			if rep.Status != 409 || rep.Code() != "state_too_big" {
				t.Fatalf("%s: a key past %d: %s, want 409 state_too_big", prefix, adk.MaxStateKeys, rep)
			}
			s = want(t, h.Do(t, "GET", app+"/"+sid, ""), 200)
			n := 0
			for k := range s.State {
				if strings.HasPrefix(k, prefix+"k") {
					n++
				}
			}
			if _, ok := s.State[prefix+"new"]; ok || n != adk.MaxStateKeys || (prefix != "app:" && s.EventCount != 0) {
				t.Fatalf("%s: after the refusal: %d keys (new: %v), %d events", prefix, n, ok, s.EventCount)
			}
			want(t, h.Do(t, "POST", ev, appendBody("e2", s.LastUpdateTime+1, s.LastUpdateTime, `{"`+prefix+`k7":2}`)), 201)
		}
	})
}

// A state key is any JSON string: one holding control characters (sent
// escaped, as JSON allows) comes back in a session that is valid JSON.
func TestStateKeysAnyString(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		for _, op := range []struct{ method, path string }{{"POST", app}, {"GET", app + "/s1"}} {
			body := ""
			if op.method == "POST" {
				body = `{"session_id":"s1","state":{"a\u0001\u007f\u000bb":1,"user:\u0007":2}}`
			}
			rep := h.Do(t, op.method, op.path, body)
			var s session
			if err := json.Unmarshal([]byte(rep.Body), &s); err != nil || rep.Status >= 300 {
				t.Fatalf("%s %s: %v: %s", op.method, op.path, err, rep)
			}
			if string(s.State["a\x01\x7f\x0bb"]) != "1" || string(s.State["user:\a"]) != "2" {
				t.Fatalf("%s %s: state %s", op.method, op.path, state(s))
			}
		}
	})
}
