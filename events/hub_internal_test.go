package events

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestSlowSubscriberDropped: a subscriber that reads nothing is dropped
// once MaxLag events wait for it; one that reads gets every event, in
// order, without waiting for the slow one.
func TestSlowSubscriberDropped(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		conn := srv.Conn(t)
		m := newMetrics()
		h := newHub(conn, slog.New(slog.NewTextHandler(io.Discard, nil)), m, time.Hour, 0, time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go h.run(ctx)
		key := srv.Layout().SessionEvents("u1", "s1")
		slow, _, _, err := h.join(t.Context(), key, mark{})
		if err != nil {
			t.Fatal(err)
		}
		fast, start, _, err := h.join(t.Context(), key, mark{})
		if err != nil {
			t.Fatal(err)
		}
		const n = MaxLag + 500
		got := make(chan int, 1)
		go func() {
			prev, count := start, 0
			for count < n {
				<-fast.ready
				for _, ev := range fast.take() {
					if !prev.Less(ev.ID) {
						t.Errorf("event %s after %s", ev.ID, prev)
					}
					prev, count = ev.ID, count+1
				}
			}
			got <- count
		}()
		c := srv.Client(t)
		for i := range n {
			if err := c.Do(t.Context(), c.B().Xadd().Key(key).Id("*").FieldValue().FieldValue("t", "x-n").FieldValue("d", strconv.Itoa(i)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if i%100 == 99 {
				h.poke(key)
			}
		}
		h.poke(key)
		select {
		case <-slow.lagged:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow subscriber was not dropped")
		}
		select {
		case count := <-got:
			if count != n {
				t.Fatalf("fast subscriber got %d events, want %d", count, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the fast subscriber did not get every event")
		}
		h.leave(fast)
		if w := h.watched(); w != 0 {
			t.Fatalf("%d streams watched after everyone left, want 0", w)
		}
	})
}

// TestReadOnSubscribe: an event written after a new watch's first read but
// before Redis confirmed its channel's subscription woke nobody; the
// confirmation has the stream read again, so it arrives (the heartbeat is
// an hour).
func TestReadOnSubscribe(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		conn := srv.Conn(t)
		m := newMetrics()
		h := newHub(conn, slog.New(slog.NewTextHandler(io.Discard, nil)), m, time.Hour, 0, time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() { h.run(ctx) })
		key := srv.Layout().SessionEvents("u1", "s1")
		c := srv.Client(t)
		xadd := func(d string) {
			t.Helper()
			if err := c.Do(t.Context(), c.B().Xadd().Key(key).Id("*").FieldValue().FieldValue("t", "x-n").FieldValue("d", d).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		xadd("0")
		s, _, _, err := h.join(t.Context(), key, mark{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; testutil.ToFloat64(m.reads) < 1; i++ { // the new watch's first read
			if i == 2000 {
				t.Fatal("the new watch was not read within 10 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		xadd("1") // nobody subscribed: its wake-up is lost
		wg.Go(func() { h.subscribe(ctx) })
		select {
		case <-s.ready:
			if evs := s.take(); len(evs) != 1 || evs[0].Data != "1" {
				t.Fatalf("got %+v, want the event written before the subscription", evs)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the event written before the subscription was confirmed did not arrive")
		}
	})
}
