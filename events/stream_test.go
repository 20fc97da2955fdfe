package events_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestStreamLive: retry first, then each write's event, keepalives while
// idle, the stream ends after deleted.
func TestStreamLive(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		if r := h.Do(t, "POST", "/v1/users/u1/sessions", `{"session_id":"s1"}`); r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		s := open(t, h.API, base+"/events", "")
		if s.Status != 200 || !strings.HasPrefix(s.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("got %d %s, want 200 text/event-stream", s.Status, s.Header.Get("Content-Type"))
		}
		if f := <-s.frames; f.Retry != "3000" {
			t.Fatalf("first frame %+v, want retry: 3000", f)
		}
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		h.Do(t, "PUT", base+"/entries/q1/feedback", `{"feedback_score":1}`)
		got := s.events(t, 2)
		if want := []string{"entry_appended", "feedback"}; !slices.Equal(types(got), want) {
			t.Fatalf("events %v, want %v", types(got), want)
		}
		if !strings.Contains(got[0].Data, `"qa_id": "q1"`) || got[0].ID == "" {
			t.Fatalf("entry_appended %+v: want the stored entry and an id", got[0])
		}
		// idle: a keepalive comment within the 1 s heartbeat
		deadline := time.After(5 * time.Second)
		for keep := false; !keep; {
			select {
			case f := <-s.frames:
				keep = f.Comment == "keepalive"
			case <-deadline:
				t.Fatal("no keepalive within 5 s")
			}
		}
		h.Do(t, "DELETE", base, "")
		if f := s.next(t, 5*time.Second); f.Event != "deleted" {
			t.Fatalf("got %+v, want deleted", f)
		}
		s.ended(t, 5*time.Second)
		// Afterwards: a new stream is 404; a resuming one gets deleted.
		if r := h.Do(t, "GET", base+"/events", ""); r.Status != 404 {
			t.Fatalf("a new stream of a deleted session: %d %s", r.Status, r.Body)
		}
		re := open(t, h.API, base+"/events", got[1].ID)
		re.first(t)
		if fs := types(re.events(t, 2)); !slices.Equal(fs, []string{"reconnected", "deleted"}) {
			t.Fatalf("resuming a deleted session: %v", fs)
		}
		re.ended(t, 5*time.Second)
	})
}

// TestStreamUnknownSession: 404 before any stream; bad ids 400.
func TestStreamRefusals(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		if r := h.Do(t, "GET", "/v1/users/u1/sessions/nope/events", ""); r.Status != 404 {
			t.Fatalf("unknown session: %d %s", r.Status, r.Body)
		}
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		if r := h.Do(t, "GET", base+"/events?after=abc", ""); r.Status != 400 || r.Code() != "invalid_cursor" {
			t.Fatalf("bad after: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "GET", base+"/events", "", "Last-Event-ID", "1-x"); r.Status != 400 || r.Code() != "invalid_cursor" {
			t.Fatalf("bad Last-Event-ID: %d %s", r.Status, r.Body)
		}
		for _, tc := range []struct{ body, code string }{
			{`{"event":"delta","data":1}`, "invalid_field"},
			{`{"event":"x-","data":1}`, "invalid_field"},
			{`{"event":"x-a"}`, "invalid_field"},
			{`{"data":1}`, "invalid_field"},
			{`{"event":"x-a","data":"` + strings.Repeat("y", 8200) + `"}`, "event_too_large"},
		} {
			if r := h.Do(t, "POST", base+"/events", tc.body); r.Code() != tc.code {
				t.Errorf("POST events %.40s: got %d %s, want %s", tc.body, r.Status, r.Body, tc.code)
			}
		}
		if r := h.Do(t, "POST", "/v1/users/u1/sessions/nope/events", `{"event":"x-a","data":1}`); r.Status != 404 {
			t.Fatalf("custom event to unknown session: %d", r.Status)
		}
		for _, m := range []string{"POST", "DELETE"} {
			if r := h.Do(t, m, "/v1/users/u1/sessions/nope/abort", ""); r.Status != 404 {
				t.Fatalf("%s abort unknown session: %d", m, r.Status)
			}
		}
	})
}

// TestAcrossHosts: a subscriber on host B sees what host A writes (woken
// by Pub/Sub: the heartbeat is 2 min), and a reconnect (to either host)
// with Last-Event-ID replays what it missed, each event once and in order.
func TestAcrossHosts(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, pubsubOnly), start(t, srv, pubsubOnly)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		s := open(t, b.API, base+"/events", "")
		s.first(t) // retry
		for i := 1; i <= 5; i++ {
			a.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"question":"q","answer":"a","qa_id":"q%d"}`, i))
		}
		got := s.events(t, 5)
		for i, f := range got {
			if f.Event != "entry_appended" || !strings.Contains(f.Data, fmt.Sprintf(`"q%d"`, i+1)) {
				t.Fatalf("event %d: %+v", i, f)
			}
		}
		s.cancel()
		// missed while away
		for i := 6; i <= 8; i++ {
			a.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"question":"q","answer":"a","qa_id":"q%d"}`, i))
		}
		r := open(t, a.API, base+"/events", got[4].ID)
		r.first(t) // retry
		if f := r.next(t, 5*time.Second); f.Event != "reconnected" || !strings.Contains(f.Data, `"gap":false`) {
			t.Fatalf("got %+v, want reconnected without gap", f)
		}
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q9"}`)
		for i, f := range r.events(t, 4) {
			if f.Event != "entry_appended" || !strings.Contains(f.Data, fmt.Sprintf(`"q%d"`, i+6)) {
				t.Fatalf("replayed event %d: %+v", i, f)
			}
		}
	})
}

// TestGapAfterTrim: a reader whose id was trimmed away learns it.
func TestGapAfterTrim(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS_MAXLEN": "10", "SESSION_EVENTS": "always"})
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		s := open(t, h.API, base+"/events", "0")
		s.first(t)
		if f := s.next(t, 5*time.Second); f.Event != "reconnected" {
			t.Fatalf("got %+v", f)
		}
		first := s.next(t, 5*time.Second)
		s.cancel()
		for i := 1; i <= 400; i++ {
			h.Do(t, "POST", base+"/events", `{"event":"x-n","data":`+fmt.Sprint(i)+`}`)
		}
		r := open(t, h.API, base+"/events?after="+first.ID, "")
		r.first(t)
		f := r.next(t, 5*time.Second)
		if f.Event != "reconnected" || !strings.Contains(f.Data, `"gap":true`) || !strings.Contains(f.Data, `"oldest_id":"`) {
			t.Fatalf("got %+v, want reconnected with a gap and the oldest id", f)
		}
		// what is left follows, in order, ending with the newest
		var last frame
		for last.Data != "400" {
			last = r.next(t, 5*time.Second)
		}
	})
}

// TestManySubscribers: 100 concurrent subscribers (on two hosts) each see
// every event of 50 concurrent writers once, in id order (woken by
// Pub/Sub: the heartbeat is 2 min); then they all leave and the hub
// watches nothing.
func TestManySubscribers(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, pubsubOnly), start(t, srv, pubsubOnly)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q0"}`)
		subs := make([]*stream, 100)
		for i := range subs {
			host := a
			if i%2 == 1 {
				host = b
			}
			subs[i] = open(t, host.API, base+"/events", "")
			<-subs[i].frames
		}
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				if r := a.Do(t, "POST", base+"/events", fmt.Sprintf(`{"event":"x-w","data":%d}`, i)); r.Status != 201 {
					t.Errorf("publish: %d %s", r.Status, r.Body)
				}
			})
		}
		wg.Wait()
		for i, s := range subs {
			seen := map[string]bool{}
			prev := ""
			for _, f := range s.events(t, 50) {
				if seen[f.Data] || f.Event != "x-w" {
					t.Fatalf("subscriber %d: %+v repeated or unexpected", i, f)
				}
				seen[f.Data] = true
				if prev != "" && !idLess(prev, f.ID) {
					t.Fatalf("subscriber %d: id %s after %s", i, f.ID, prev)
				}
				prev = f.ID
			}
			s.cancel()
		}
		for _, s := range subs {
			s.ended(t, 5*time.Second)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			m := a.Metrics(t) + b.Metrics(t)
			if strings.Count(m, "sidecar_events_subscribers 0") == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscribers gauge not back to 0")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func idLess(a, b string) bool {
	var am, as, bm, bs uint64
	fmt.Sscanf(a, "%d-%d", &am, &as)
	fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return am < bm || (am == bm && as < bs)
}

// TestShutdownEndsStreams: stopping the host (SIGTERM) ends an open stream
// at once.
func TestShutdownEndsStreams(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_SSE_HEARTBEAT": "60s"})
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		s := open(t, h.API, base+"/events", "")
		s.first(t)
		done := make(chan error, 1)
		go func() { done <- h.Stop() }()
		s.ended(t, 5*time.Second)
		if err := <-done; err != nil {
			t.Fatalf("stop: %v", err)
		}
	})
}

// TestStreamCap: SIDECAR_SSE_MAX_STREAMS streams, then 503 too_many_streams;
// the streams hold no SIDECAR_MAX_INFLIGHT slot and no API connection slot.
func TestStreamCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_SSE_MAX_STREAMS": "3", "SIDECAR_MAX_INFLIGHT": "2", "SIDECAR_MAX_CONNECTIONS": "2"})
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		for range 3 {
			s := open(t, h.API, base+"/events", "")
			s.first(t)
		}
		if r := h.Do(t, "GET", base+"/events", ""); r.Status != 503 || r.Code() != "too_many_streams" {
			t.Fatalf("4th stream: %d %s", r.Status, r.Body)
		}
		// A client of its own: a new API connection beside 3 streams (with
		// the connection cap at 2, the streams' connections would have
		// kept the third stream out already).
		c := sidecartest.NewClient(t, h.API)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if r := c.Send(ctx, "GET", base+"/entries", ""); r.Status != 200 {
			t.Fatalf("a request beside 3 streams with 2 in-flight and 2 connection slots: %s", r)
		}
	})
}

// TestAbort: 202 and the header on every write answer while set; a repeat
// emits nothing; a status change clears it.
func TestAbort(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, always)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		r := h.Do(t, "POST", base+"/abort", "")
		if r.Status != 202 || r.Header.Get("Sidecar-Abort-Requested") == "" || !strings.Contains(r.Body, "abort_requested_at") {
			t.Fatalf("abort: %d %v %s", r.Status, r.Header, r.Body)
		}
		at := r.Header.Get("Sidecar-Abort-Requested")
		for _, w := range []struct{ method, path, body string }{
			{"POST", base + "/entries", `{"question":"q","answer":"a","qa_id":"q2"}`},
			{"POST", base + "/traces", `{"origin_function":"f","status":"ok"}`},
			{"POST", base + "/usage", `{"model":"gpt-4o","tokens_in":1}`},
			{"POST", base + "/abort", ``},
		} {
			if got := h.Do(t, w.method, w.path, w.body).Header.Get("Sidecar-Abort-Requested"); got != at {
				t.Fatalf("%s %s: header %q, want %q", w.method, w.path, got, at)
			}
		}
		if got := h.Do(t, "POST", base+"/complete", `{}`); got.Header.Get("Sidecar-Abort-Requested") != "" {
			t.Fatalf("complete still shows the abort: %v", got.Header)
		}
		if got := h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q3"}`); got.Header.Get("Sidecar-Abort-Requested") != "" {
			t.Fatalf("a write after the status change shows the abort")
		}
		if got := xtypes(t, srv, srv.Layout().SessionEvents("u1", "s1")); strings.Count(strings.Join(got, ","), "abort") != 1 {
			t.Fatalf("events %v: want one abort", got)
		}
	})
}

// TestRedisOutageMidStream: Redis dies under an open stream and comes back
// (with its append-only file): the stream stays open through the outage
// and delivers what is written after it, and a reconnect replays it too.
func TestRedisOutageMidStream(t *testing.T) {
	srv := redisstoretest.NewReal(t, "--appendonly", "yes", "--appendfsync", "always")
	h := start(t, srv, nil)
	h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
	s := open(t, h.API, base+"/events", "")
	s.first(t)
	h.Do(t, "POST", base+"/events", `{"event":"x-a","data":1}`)
	first := s.next(t, 5*time.Second)
	if first.Event != "x-a" {
		t.Fatalf("got %+v", first)
	}
	srv.Kill()
	if r := h.Do(t, "POST", base+"/events", `{"event":"x-lost","data":1}`); r.Status != 503 {
		t.Fatalf("publish during the outage: %d %s, want 503", r.Status, r.Body)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var r sidecartest.Reply
	for range 200 { // the sidecar's health check notices the return
		if r = h.Do(t, "POST", base+"/events", `{"event":"x-b","data":2}`); r.Status == 201 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.Status != 201 {
		t.Fatalf("publish after the outage: %d %s", r.Status, r.Body)
	}
	if f := s.next(t, 10*time.Second); f.Event != "x-b" {
		t.Fatalf("after the outage: %+v, want x-b", f)
	}
	// The stream's channel is subscribed again on the restarted server.
	ch := redisstore.EventsChannel(srv.Layout().SessionEvents("u1", "s1"))
	waitFor(t, "the channel subscribed again", func() bool { return slices.Equal(pubsubChannels(t, srv, "*"), []string{ch}) })
	// the sidecar's own client may still be renewing after the restart:
	// a stream refused meanwhile (503) is opened again
	var re *stream
	for range 100 {
		if re = open(t, h.API, base+"/events", first.ID); re.Status == http.StatusOK {
			break
		}
		re.cancel()
		time.Sleep(50 * time.Millisecond)
	}
	re.first(t)
	if got := types(re.events(t, 2)); !slices.Equal(got, []string{"reconnected", "x-b"}) {
		t.Fatalf("replay after the outage: %v", got)
	}
}

// TestNoLeaks: 100 clients come and go (half of them cut while events
// flow), the host stops, and no goroutine is left.
func TestNoLeaks(t *testing.T) {
	leaksBefore := goleak.IgnoreCurrent()
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
	tr := &http.Transport{}
	hc := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", h.API+base+"/events?after=0", nil)
			resp, err := hc.Do(req)
			if err != nil {
				t.Errorf("subscriber %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 256)
			_, _ = resp.Body.Read(buf) // the stream began
			if i%2 == 0 {
				h.Do(t, "POST", base+"/events", `{"event":"x-n","data":1}`)
			}
		})
	}
	wg.Wait()
	if err := h.Stop(); err != nil {
		t.Fatalf("stop host: %v", err)
	}
	h.Conn.Close()
	tr.CloseIdleConnections()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	goleak.VerifyNone(t, leaksBefore,
		// redisstoretest's watcher of the redis-server process.
		goleak.IgnoreAnyFunction("github.com/agentsidecar/agentsidecar/redisstore/redisstoretest.(*Server).Start.func1"),
		goleak.IgnoreAnyFunction("os/exec.(*Cmd).Start.func2"))
}

// TestReplayAfterRestart: a sidecar stops (its stream ends at once), a new
// one starts on the same Redis, and the client resumes there with its last
// id: what was written meanwhile comes once, in order.
func TestReplayAfterRestart(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a := start(t, srv, nil)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		s := open(t, a.API, base+"/events", "")
		s.first(t)
		a.Do(t, "POST", base+"/events", `{"event":"x-n","data":1}`)
		last := s.next(t, 5*time.Second)
		if err := a.Stop(); err != nil {
			t.Fatal(err)
		}
		s.ended(t, 5*time.Second)
		b := start(t, srv, nil)
		for i := 2; i <= 4; i++ {
			b.Do(t, "POST", base+"/events", fmt.Sprintf(`{"event":"x-n","data":%d}`, i))
		}
		r := open(t, b.API, base+"/events", last.ID)
		r.first(t)
		got := r.events(t, 4)
		if got[0].Event != "reconnected" || got[1].Data != "2" || got[2].Data != "3" || got[3].Data != "4" {
			t.Fatalf("after the restart: %+v", got)
		}
	})
}

// TestWokenByPubSub: with the heartbeat at its longest (2 min), an event
// still arrives, so the write's PUBLISH woke the other host's reader (on a
// Cluster too, where the two hosts' connections may be on other nodes than
// the session's).
func TestWokenByPubSub(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		env := envconf.Env{"SIDECAR_SSE_HEARTBEAT": "2m"}
		a, b := start(t, srv, env), start(t, srv, env)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		s := open(t, b.API, base+"/events", "")
		s.first(t)
		// The subscription may still be on its way: publish until one lands
		// (each is a new event; any of them proves the wake-up).
		for i := 0; ; i++ {
			a.Do(t, "POST", base+"/events", `{"event":"x-n","data":1}`)
			select {
			case f := <-s.frames:
				if f.Event != "x-n" {
					t.Fatalf("got %+v", f)
				}
				return
			case <-time.After(time.Second):
				if i == 30 {
					t.Fatal("no event within 30 s with a 2 min heartbeat: Pub/Sub did not wake the reader")
				}
			}
		}
	})
}
