package events_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/erasure"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// shortGrace: SESSION_EVENTS=watched (the default) with a 2 s grace
// period, so a test can outlive it; markers are refreshed every 0.5 s.
var shortGrace = envconf.Env{"SESSION_EVENTS_GRACE_SECONDS": "2"}

// eventKeys lists every key of an event stream or its marker.
func eventKeys(t *testing.T, srv *redisstoretest.Server) []string {
	t.Helper()
	return append(srv.Keys(t, "agent_session_events*"), srv.Keys(t, "agent_user_events*")...)
}

// TestUnwatchedRecordsNothing: with nobody watching, no write leaves an
// event stream, a custom event is still accepted (201 with an id) and an
// abort still works (202, the header, cleared by 204); deleting the
// session then leaves no key that names it.
func TestUnwatchedRecordsNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, nil), start(t, srv, nil)
		for i := range 3 {
			if r := a.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"question":"q","answer":"a","qa_id":"q%d"}`, i)); r.Status != 201 {
				t.Fatalf("append: %d %s", r.Status, r.Body)
			}
		}
		r := b.Do(t, "POST", base+"/events", `{"event":"x-delta","data":"tok"}`)
		if _, ok := parseIDBody(r.Body); r.Status != 201 || !ok {
			t.Fatalf("custom event: %d %s, want 201 with an id", r.Status, r.Body)
		}
		if r := b.Do(t, "POST", base+"/abort", ""); r.Status != 202 {
			t.Fatalf("abort: %d %s", r.Status, r.Body)
		}
		if r := a.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`); r.Header.Get("Sidecar-Abort-Requested") == "" {
			t.Fatalf("a write after the abort has no Sidecar-Abort-Requested header: %v", r.Header)
		}
		if r := a.Do(t, "DELETE", base+"/abort", ""); r.Status != 204 {
			t.Fatalf("clear abort: %d %s", r.Status, r.Body)
		}
		if r := a.Do(t, "PATCH", "/v1/users/u1/state", `{"a":1}`); r.Status != 200 {
			t.Fatalf("user state: %d %s", r.Status, r.Body)
		}
		if got := eventKeys(t, srv); len(got) != 0 {
			t.Fatalf("event keys %q with nobody watching, want none", got)
		}
		if r := a.Do(t, "DELETE", base, ""); r.Status != 200 && r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if got := srv.Keys(t, "*u1:s1*"); len(got) != 0 {
			t.Fatalf("keys %q name the deleted, never watched session, want none", got)
		}
	})
}

func parseIDBody(body string) (string, bool) {
	const p = `{"id":"`
	if !strings.HasPrefix(body, p) {
		return "", false
	}
	id, _, ok := strings.Cut(body[len(p):], `"`)
	return id, ok && id != ""
}

// TestWatchedAcrossPods: a watcher on pod A makes writes through pod B
// record and reach it, on a session's stream and on the user's; once it
// left and the grace period ran out, writes record nothing again, and a
// delete leaves no tombstone.
func TestWatchedAcrossPods(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, shortGrace), start(t, srv, shortGrace)
		b.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		s := open(t, a.API, base+"/events", "")
		s.first(t)
		u := open(t, a.API, "/v1/users/u1/events", "")
		u.first(t)
		b.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		if f := s.next(t, 10*time.Second); f.Event != "entry_appended" || !strings.Contains(f.Data, `"q1"`) {
			t.Fatalf("got %+v, want q1's entry_appended", f)
		}
		b.Do(t, "PATCH", "/v1/users/u1/state", `{"a":1}`)
		if f := u.next(t, 10*time.Second); f.Event != "user_state_changed" {
			t.Fatalf("got %+v on the user's stream, want user_state_changed", f)
		}
		s.cancel()
		u.cancel()
		// the user stream's mark is a key that expires; the session's a
		// field of the user's marker whose time runs out
		waitFor(t, "the marks lapsed after the grace period", func() bool {
			return len(srv.Keys(t, "agent_*_events_watch*")) == 0 && !sessionWatched(t, srv, "u1", "s1")
		})
		stream := srv.Layout().SessionEvents("u1", "s1")
		before := len(xtypes(t, srv, stream))
		b.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q2"}`)
		if got := xtypes(t, srv, stream); len(got) != before {
			t.Fatalf("events %v after the grace period, want the %d of before", got, before)
		}
		b.Do(t, "DELETE", base, "")
		if got := srv.Keys(t, "*u1:s1*"); len(got) != 0 {
			t.Fatalf("keys %q after deleting a session nobody watches, want none", got)
		}
		if v, ok := sessionMark(t, srv, "u1", "s1"); ok {
			t.Fatalf("the deleted session's mark %q is left in the user's marker", v)
		}
	})
}

// TestReconnectGrace: a reader that reconnects within the grace period
// gets what it missed without a gap; one that comes back after it (the
// writes meanwhile recorded nothing) learns of the gap.
func TestReconnectGrace(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, shortGrace), start(t, srv, shortGrace)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		s := open(t, a.API, base+"/events", "")
		s.first(t)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		last := s.next(t, 10*time.Second)
		s.cancel()
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q2"}`)
		r := open(t, b.API, base+"/events", last.ID)
		r.first(t)
		if f := r.next(t, 10*time.Second); f.Event != "reconnected" || !strings.Contains(f.Data, `"gap":false`) {
			t.Fatalf("got %+v, want reconnected without a gap within the grace period", f)
		}
		last = r.next(t, 10*time.Second)
		if last.Event != "entry_appended" || !strings.Contains(last.Data, `"q2"`) {
			t.Fatalf("got %+v, want q2's entry_appended replayed", last)
		}
		r.cancel()
		waitFor(t, "the mark lapsed after the grace period", func() bool { return !sessionWatched(t, srv, "u1", "s1") })
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q3"}`)
		g := open(t, b.API, base+"/events", last.ID)
		g.first(t)
		if f := g.next(t, 10*time.Second); f.Event != "reconnected" || !strings.Contains(f.Data, `"gap":true`) {
			t.Fatalf("got %+v, want reconnected with a gap after the grace period", f)
		}
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q4"}`)
		if f := g.next(t, 10*time.Second); f.Event != "entry_appended" || !strings.Contains(f.Data, `"q4"`) {
			t.Fatalf("got %+v, want q4's entry_appended live (q3 was never recorded)", f)
		}
	})
}

// TestWatchersOnSeveralPods: watchers on three pods, opened and closed
// concurrently, keep the marker alive for each other: with a third of
// them gone and several grace periods passed, every remaining watcher
// still gets every write, without a break (no stream dropped), and the
// marker's unbroken time is the first watcher's.
func TestWatchersOnSeveralPods(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		var pods []string
		for range 3 {
			pods = append(pods, start(t, srv, shortGrace).API)
		}
		w := start(t, srv, shortGrace)
		w.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		const n = 9
		streams := make([]*stream, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				streams[i] = open(t, pods[i%3], base+"/events", "")
			})
		}
		wg.Wait()
		for _, s := range streams {
			s.first(t)
		}
		since := markSince(t, srv, "u1", "s1")
		// pod 0's watchers leave, concurrently with writes
		for i := 0; i < n; i += 3 {
			wg.Go(func() { streams[i].cancel() })
		}
		for k := 1; k <= 3; k++ {
			wg.Go(func() { w.Do(t, "POST", base+"/events", fmt.Sprintf(`{"event":"x-n","data":%d}`, k)) })
		}
		wg.Wait()
		time.Sleep(3 * 2 * time.Second) // three grace periods: only the refreshes keep it
		w.Do(t, "POST", base+"/events", `{"event":"x-last","data":0}`)
		for i, s := range streams {
			if i%3 == 0 {
				continue
			}
			seen := map[string]int{}
			for seen["x-last"] == 0 {
				seen[s.next(t, 10*time.Second).Event]++
			}
			if seen["x-n"] != 3 {
				t.Fatalf("watcher %d saw %v, want the 3 x-n events and x-last", i, seen)
			}
			if got := markSince(t, srv, "u1", "s1"); got != since {
				t.Fatalf("the marker's since moved from %s to %s: recording broke off", since, got)
			}
		}
		for i, s := range streams {
			if i%3 != 0 {
				select {
				case <-s.done:
					t.Fatalf("watcher %d's stream ended", i)
				default:
				}
			}
		}
	})
}

// sessionMark is session s's watch mark: the field w:<s> of user u's
// marker ("<until ms>:<since ms>"), and whether it is there.
func sessionMark(t *testing.T, srv *redisstoretest.Server, u, s string) (string, bool) {
	t.Helper()
	c := srv.Client(t)
	v, err := c.Do(t.Context(), c.B().Hget().Key(srv.Layout().UserMarker(u)).Field(events.WatchField.Name+":"+s).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", false
	}
	if err != nil {
		t.Fatalf("the mark of %s/%s: %v", u, s, err)
	}
	return v, true
}

// sessionWatched reports whether session s's mark says watched: its
// until ahead of Redis's clock.
func sessionWatched(t *testing.T, srv *redisstoretest.Server, u, s string) bool {
	t.Helper()
	v, ok := sessionMark(t, srv, u, s)
	if !ok {
		return false
	}
	until, _, _ := strings.Cut(v, ":")
	c := srv.Client(t)
	now, err := c.Do(t.Context(), c.B().Time().Build()).AsStrSlice()
	if err != nil || len(now) != 2 {
		t.Fatalf("TIME: %v %v", now, err)
	}
	ms, err1 := strconv.ParseInt(until, 10, 64)
	sec, err2 := strconv.ParseInt(now[0], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("mark %q, TIME %v", v, now)
	}
	return ms > sec*1000
}

// markSince is the session's mark's since (its value after the ':').
func markSince(t *testing.T, srv *redisstoretest.Server, u, s string) string {
	t.Helper()
	v, ok := sessionMark(t, srv, u, s)
	if !ok {
		t.Fatalf("no mark of %s/%s", u, s)
	}
	_, since, ok := strings.Cut(v, ":")
	if !ok {
		t.Fatalf("mark %q, want <until>:<since>", v)
	}
	return since
}

// forgetMark removes session s's mark by hand (as a long outage lets its
// time run out).
func forgetMark(t *testing.T, srv *redisstoretest.Server, u, s string) {
	t.Helper()
	c := srv.Client(t)
	if err := c.Do(t.Context(), c.B().Hdel().Key(srv.Layout().UserMarker(u)).Field(events.WatchField.Name+":"+s).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// TestLapsedMarkerEndsStreams: when a stream's marker lapsed under an open
// stream (here deleted by hand, as a long outage would let it expire), the
// writes meanwhile recorded nothing: the next refresh finds a new watch
// and ends the stream, so the client reconnects with its id and learns of
// the gap.
func TestLapsedMarkerEndsStreams(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, shortGrace)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		s := open(t, h.API, base+"/events", "")
		s.first(t)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		last := s.next(t, 10*time.Second)
		forgetMark(t, srv, "u1", "s1")
		s.ended(t, 10*time.Second)
		r := open(t, h.API, base+"/events", last.ID)
		r.first(t)
		if f := r.next(t, 10*time.Second); f.Event != "reconnected" || !strings.Contains(f.Data, `"gap":true`) {
			t.Fatalf("got %+v, want reconnected with a gap", f)
		}
	})
}

// TestErasureEndsWatches: a user erased while readers watch the user's
// stream and a session's: their refreshes must not make the markers again
// (keys naming the erased user, kept alive for as long as a reader stays),
// and the streams end.
func TestErasureEndsWatches(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		env := envconf.Env{"SIDECAR_SSE_HEARTBEAT": "1s", "SESSION_EVENTS_GRACE_SECONDS": "2", "SEARCH_INDEX": "false"}
		h := sidecartest.Start(t, srv, env, sessions.Factory, ttl.Factory, usage.Factory, registry.Factory, events.Factory, erasure.Factory)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		s := open(t, h.API, base+"/events", "")
		s.first(t)
		u := open(t, h.API, "/v1/users/u1/events", "")
		u.first(t)
		if r := h.Do(t, "DELETE", "/v1/users/u1", ""); r.Status != 200 {
			t.Fatalf("erase: %s", r)
		}
		s.ended(t, 10*time.Second)
		u.ended(t, 10*time.Second)
		if got := srv.Keys(t, "*u1*"); len(got) != 0 {
			t.Fatalf("keys %q name the erased user", got)
		}
	})
}

// TestLapseRenewedByAnotherPod: a marker lapsed under a watch on pod A (its
// refreshes late: here deleted by hand), a write then recorded nothing, and
// a reader on pod B began the marker anew before A's next refresh. A must
// not hand its reader the events recorded since (it would reconnect after
// the unrecorded write and never learn of it): the stream ends, and the
// reconnect reports the gap.
func TestLapseRenewedByAnotherPod(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		// markers refreshed every 20 s: only a read can see the lapse
		env := envconf.Env{"SIDECAR_SSE_HEARTBEAT": "20s", "SESSION_EVENTS_GRACE_SECONDS": "80"}
		a, b := start(t, srv, env), start(t, srv, env)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		s := open(t, a.API, base+"/events", "")
		s.first(t)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		last := s.next(t, 10*time.Second)
		forgetMark(t, srv, "u1", "s1")
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"w1"}`) // recorded nowhere
		o := open(t, b.API, base+"/events", "")
		o.first(t)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"w2"}`)
		if f := o.next(t, 10*time.Second); !strings.Contains(f.Data, `"w2"`) {
			t.Fatalf("pod B's reader got %+v, want w2", f)
		}
		for _, f := range untilEnd(t, s, 30*time.Second) {
			last = f
		}
		r := open(t, a.API, base+"/events", last.ID)
		r.first(t)
		if f := r.next(t, 10*time.Second); f.Event != "reconnected" || !strings.Contains(f.Data, `"gap":true`) {
			t.Fatalf("resumed after %s: got %+v, want reconnected with a gap (w1 was never recorded)", last.ID, f)
		}
	})
}

// untilEnd returns the events s gets until the server ends it (within d).
func untilEnd(t *testing.T, s *stream, d time.Duration) []frame {
	t.Helper()
	var out []frame
	deadline := time.After(d)
	for {
		select {
		case f := <-s.frames:
			if f.Event != "" {
				out = append(out, f)
			}
		case <-s.done:
			for {
				select {
				case f := <-s.frames:
					if f.Event != "" {
						out = append(out, f)
					}
				default:
					return out
				}
			}
		case <-deadline:
			t.Fatalf("stream still open after %s", d)
		}
	}
}

// TestDeleteForgetsMark: a session deleted under its watchers (one on
// each of two pods) leaves no field of the user's marker naming it: the
// live readers get its deleted event (the delete removed the mark; the
// event carries it, so the hub tells the watch ran to the end), a reader
// resuming from the tombstone gets it too, and neither their refreshes
// nor the resume mark the deleted session again.
func TestDeleteForgetsMark(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, shortGrace), start(t, srv, shortGrace)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		sa, sb := open(t, a.API, base+"/events", ""), open(t, b.API, base+"/events", "")
		sa.first(t)
		sb.first(t)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		last := sa.next(t, 10*time.Second)
		if _, ok := sessionMark(t, srv, "u1", "s1"); !ok {
			t.Fatal("no mark of the watched session")
		}
		if r := b.Do(t, "DELETE", base, ""); r.Status != 204 {
			t.Fatalf("delete: %s", r)
		}
		for i, s := range []*stream{sa, sb} {
			for f := s.next(t, 10*time.Second); f.Event != "deleted"; f = s.next(t, 10*time.Second) {
				if f.Event != "entry_appended" {
					t.Fatalf("reader %d got %+v, want deleted", i, f)
				}
			}
			s.ended(t, 10*time.Second)
		}
		r := open(t, a.API, base+"/events", last.ID)
		r.first(t)
		if fs := types(r.events(t, 2)); !slices.Equal(fs, []string{"reconnected", "deleted"}) {
			t.Fatalf("resuming the deleted session: %v", fs)
		}
		r.ended(t, 10*time.Second)
		time.Sleep(2 * time.Second) // four refresh periods of the markers
		if v, ok := sessionMark(t, srv, "u1", "s1"); ok {
			t.Fatalf("the deleted session's mark %q is in the user's marker", v)
		}
	})
}

// TestMarkKeepsMarkerExpiry: marking a session's stream gives the user's
// marker at least the grace period, and keeps a marker without expiry
// (one a session without expiry keeps alive) without one.
func TestMarkKeepsMarkerExpiry(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, shortGrace)
		c := srv.Client(t)
		pttl := func(u string) int64 {
			t.Helper()
			ms, err := c.Do(t.Context(), c.B().Pttl().Key(srv.Layout().UserMarker(u)).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			return ms
		}
		for _, u := range []string{"u1", "u2", "u3"} {
			h.Do(t, "POST", "/v1/users/"+u+"/sessions/s1/entries", `{"question":"q","answer":"a"}`)
		}
		for _, cmd := range [][]string{
			{"HSET", srv.Layout().UserMarker("u2"), "keys", "[]"},
			{"HSET", srv.Layout().UserMarker("u3"), "keys", "[]"},
			{"EXPIRE", srv.Layout().UserMarker("u3"), "3600"},
		} {
			if err := c.Do(t.Context(), c.B().Arbitrary(cmd[0]).Keys(cmd[1]).Args(cmd[2:]...).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		for _, u := range []string{"u1", "u2", "u3"} {
			open(t, h.API, "/v1/users/"+u+"/sessions/s1/events", "").first(t)
		}
		if ms := pttl("u1"); ms <= 0 || ms > 2000 {
			t.Errorf("a marker made by the mark: PTTL %d ms, want the 2 s grace period", ms)
		}
		if ms := pttl("u2"); ms != -1 {
			t.Errorf("a marker without expiry: PTTL %d ms after the mark, want none (-1)", ms)
		}
		if ms := pttl("u3"); ms <= 2000 {
			t.Errorf("a marker of an hour: PTTL %d ms after the mark, want it kept", ms)
		}
	})
}
