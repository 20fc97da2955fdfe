package events

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestSlowSubscriberDropped: a subscriber that reads nothing is dropped
// once MaxLag events wait for it; one that reads gets every event, in
// order, without waiting for the slow one.
func TestSlowSubscriberDropped(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		conn := srv.Conn(t)
		m := newMetrics()
		h := newHub(conn, slog.New(slog.NewTextHandler(io.Discard, nil)), m, time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go h.run(ctx)
		key := srv.Layout().SessionEvents("u1", "s1")
		slow, _, err := h.join(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		fast, start, err := h.join(t.Context(), key)
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
