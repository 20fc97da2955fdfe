package events_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// A heartbeat so long that only Pub/Sub can deliver within a test.
var pubsubOnly = envconf.Env{"SIDECAR_SSE_HEARTBEAT": "2m"}

// TestNoSubscriptionWhileIdle: two sidecars whose clients watch nothing
// hold no Pub/Sub channel, through writes and after a stream came and
// went, so a write's PUBLISH on its stream's channel reaches nobody; the
// channel is the one the scripts publish on (a raw subscriber gets every
// write's empty message there).
func TestNoSubscriptionWhileIdle(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, always), start(t, srv, always)
		ch := redisstore.EventsChannel(srv.Layout().SessionEvents("u1", "s1"))
		msgs, stop := rawSubscribe(t, srv, ch)
		a.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		b.Do(t, "POST", base+"/events", `{"event":"x-n","data":1}`)
		for i := range 2 {
			select {
			case m := <-msgs:
				if m.Channel != ch || m.Message != "" {
					t.Fatalf("message %+v, want an empty one on %s", m, ch)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("write %d published nothing on %s", i+1, ch)
			}
		}
		stop()
		waitFor(t, "the test's own subscriber gone", func() bool { return numsub(t, srv, ch) == 0 })
		if got := pubsubChannels(t, srv, "*"); len(got) != 0 {
			t.Fatalf("PUBSUB CHANNELS * = %q with no stream open, want none", got)
		}
		s := open(t, b.API, base+"/events", "")
		s.first(t)
		waitFor(t, "a subscription while a stream is open", func() bool { return numsub(t, srv, ch) == 1 })
		s.cancel()
		waitFor(t, "no subscription once the stream closed", func() bool { return len(pubsubChannels(t, srv, "*")) == 0 })
		a.Do(t, "POST", base+"/events", `{"event":"x-n","data":2}`)
		if n := numsub(t, srv, ch); n != 0 {
			t.Fatalf("PUBSUB NUMSUB %s = %d after a write, want 0", ch, n)
		}
		if n := publish(t, srv, ch); n != 0 {
			t.Fatalf("PUBLISH %s reached %d receivers, want 0", ch, n)
		}
	})
}

// TestChannelFollowsWatchers: a stream's first watcher subscribes its
// channel, a second shares the subscription, the first leaving keeps it
// (an event still arrives by Pub/Sub alone), the last leaving drops it; a
// user stream has its own channel.
func TestChannelFollowsWatchers(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, pubsubOnly)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		l := srv.Layout()
		ch, uch := redisstore.EventsChannel(l.SessionEvents("u1", "s1")), redisstore.EventsChannel(l.UserEvents("u1"))
		x1 := open(t, h.API, base+"/events", "")
		x1.first(t)
		waitFor(t, "the stream's channel subscribed", func() bool { return slices.Equal(pubsubChannels(t, srv, "sidecar:events:*"), []string{ch}) })
		x2 := open(t, h.API, base+"/events", "")
		x2.first(t)
		u := open(t, h.API, "/v1/users/u1/events", "")
		u.first(t)
		want := []string{ch, uch}
		slices.Sort(want)
		waitFor(t, "the user stream's channel subscribed", func() bool { return slices.Equal(pubsubChannels(t, srv, "sidecar:events:*"), want) })
		if n := numsub(t, srv, ch); n != 1 {
			t.Fatalf("two streams of one session: PUBSUB NUMSUB %s = %d, want 1 (one subscription)", ch, n)
		}
		x1.cancel()
		waitFor(t, "the first stream left", func() bool {
			return strings.Contains(h.Metrics(t), "sidecar_events_subscribers 2")
		})
		h.Do(t, "POST", base+"/events", `{"event":"x-n","data":1}`)
		if f := x2.next(t, 10*time.Second); f.Event != "x-n" {
			t.Fatalf("after the first watcher left: %+v, want x-n by Pub/Sub", f)
		}
		x2.cancel()
		waitFor(t, "the channel dropped with its last watcher", func() bool {
			return slices.Equal(pubsubChannels(t, srv, "sidecar:events:*"), []string{uch})
		})
		u.cancel()
		waitFor(t, "no channel left", func() bool { return len(pubsubChannels(t, srv, "sidecar:events:*")) == 0 })
	})
}

// TestChannelChurn: 12 goroutines open and close streams of 6 sessions
// while a writer publishes to all of them; each keeps its last stream of
// sessions 0-2 open. Then exactly the kept streams' channels are
// subscribed, and every kept stream got every event written to its session
// after it opened, once and in order (the heartbeat is 2 min: Pub/Sub
// alone delivers).
func TestChannelChurn(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, pubsubOnly)
		const sessions = 6
		path := func(i int) string { return fmt.Sprintf("/v1/users/u1/sessions/s%d", i) }
		for i := range sessions {
			h.Do(t, "POST", path(i)+"/entries", `{"question":"q","answer":"a"}`)
		}
		var seq atomic.Int64
		var wmu sync.Mutex
		written := make([][]int64, sessions) // the writes' numbers, per session
		stop := make(chan struct{})
		var writer sync.WaitGroup
		writer.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s, n := i%sessions, seq.Add(1)
				if r := h.Do(t, "POST", path(s)+"/events", fmt.Sprintf(`{"event":"x-n","data":%d}`, n)); r.Status != 201 {
					t.Errorf("publish: %d %s", r.Status, r.Body)
					return
				}
				wmu.Lock()
				written[s] = append(written[s], n)
				wmu.Unlock()
			}
		})
		stopWriter := sync.OnceFunc(func() { close(stop); writer.Wait() })
		defer stopWriter()
		type kept struct {
			s    *stream
			sess int
			from int64 // writes numbered above it began after the stream opened
		}
		keep := make([]kept, 12)
		var churn sync.WaitGroup
		for g := range keep {
			churn.Go(func() {
				for i := range 15 {
					sess := rand.N(sessions)
					if i == 14 {
						sess = g % 3
					}
					s := open(t, h.API, path(sess)+"/events", "")
					select {
					case f := <-s.frames:
						if f.Retry == "" {
							t.Errorf("first frame %+v", f)
						}
					case <-time.After(10 * time.Second):
						t.Errorf("stream %d of goroutine %d: no first frame within 10 s (status %d)", i, g, s.Status)
						return
					}
					if i == 14 {
						keep[g] = kept{s, sess, seq.Load()}
						return
					}
					time.Sleep(time.Duration(rand.N(3)) * time.Millisecond)
					s.cancel()
				}
			})
		}
		churn.Wait()
		if t.Failed() {
			return
		}
		waitFor(t, "the churned streams closed", func() bool {
			return strings.Contains(h.Metrics(t), fmt.Sprintf("sidecar_events_subscribers %d", len(keep)))
		})
		time.Sleep(50 * time.Millisecond) // writes go on after the churn
		stopWriter()
		l := srv.Layout()
		want := []string{}
		for i := range 3 {
			want = append(want, redisstore.EventsChannel(l.SessionEvents("u1", "s"+strconv.Itoa(i))))
		}
		slices.Sort(want)
		var got []string
		waitFor(t, "the kept streams' channels, and only those", func() bool {
			got = pubsubChannels(t, srv, "sidecar:events:*")
			return slices.Equal(got, want)
		})
		for g, k := range keep {
			var due []string
			for _, n := range written[k.sess] {
				if n > k.from {
					due = append(due, strconv.FormatInt(n, 10))
				}
			}
			var recv []string
			for len(due) > 0 && !containsAll(recv, due) {
				f := k.s.next(t, 10*time.Second)
				recv = append(recv, f.Data)
			}
			for i := 1; i < len(recv); i++ {
				a, _ := strconv.Atoi(recv[i-1])
				b, _ := strconv.Atoi(recv[i])
				if b <= a {
					t.Fatalf("stream %d (s%d): %s after %s", g, k.sess, recv[i], recv[i-1])
				}
			}
		}
		if t.Failed() {
			return
		}
		if got := pubsubChannels(t, srv, "sidecar:events:*"); !slices.Equal(got, want) {
			t.Fatalf("channels %q at the end, want %q", got, want)
		}
	})
}

// TestChannelACL: a Redis user allowed only the channels
// sidecar:events:* (docs/operations.md) writes, publishes and subscribes:
// a stream is woken by Pub/Sub alone.
func TestChannelACL(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	if reply, err := redisstoretest.RawCommand(srv.Addr, "ACL SETUSER evt on >pw ~* resetchannels &sidecar:events:* +@all", 5*time.Second); err != nil || reply != "+OK" {
		t.Fatalf("ACL SETUSER: %q %v", reply, err)
	}
	h := sidecartest.StartURL(t, "redis://evt:pw@"+srv.Addr, pubsubOnly,
		sessions.Factory, ttl.Factory, usage.Factory, registry.Factory, events.Factory)
	waitFor(t, "the sidecar ready", func() bool {
		return h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`).Status == 201
	})
	s := open(t, h.API, base+"/events", "")
	s.first(t)
	ch := redisstore.EventsChannel(srv.Layout().SessionEvents("u1", "s1"))
	waitFor(t, "the channel subscribed", func() bool { return numsub(t, srv, ch) == 1 })
	if r := h.Do(t, "POST", base+"/events", `{"event":"x-n","data":1}`); r.Status != 201 {
		t.Fatalf("publish: %d %s", r.Status, r.Body)
	}
	if f := s.next(t, 10*time.Second); f.Event != "x-n" {
		t.Fatalf("got %+v, want x-n", f)
	}
}

// A Redis user without the channel pattern still writes: the scripts'
// PUBLISH is a best-effort wake-up the ACL may refuse (it failed the write
// after its commands ran). The event is in the stream, and a reader gets
// it at the heartbeat re-read.
func TestWritesWithoutChannelPermission(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	if reply, err := redisstoretest.RawCommand(srv.Addr, "ACL SETUSER nochan on >pw ~* resetchannels +@all", 5*time.Second); err != nil || reply != "+OK" {
		t.Fatalf("ACL SETUSER: %q %v", reply, err)
	}
	h := sidecartest.StartURL(t, "redis://nochan:pw@"+srv.Addr, envconf.Env{"SIDECAR_SSE_HEARTBEAT": "1s", "SESSION_EVENTS": "always"},
		sessions.Factory, ttl.Factory, usage.Factory, registry.Factory, events.Factory)
	waitFor(t, "the sidecar ready", func() bool {
		return sidecartest.Do(t, "GET", h.Ops+"/readyz", "").Status == 200
	})
	if r := h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`); r.Status != 201 {
		t.Fatalf("append without channel permission: %d %s", r.Status, r.Body)
	}
	if r := h.Do(t, "PUT", base+"/entries/q1/feedback", `{"feedback_score":4}`); r.Status != 200 {
		t.Fatalf("feedback without channel permission: %d %s", r.Status, r.Body)
	}
	s := open(t, h.API, base+"/events?after=0-0", "")
	event := func() frame { // the next event, past the retry and reconnected frames
		t.Helper()
		for {
			if f := s.next(t, 10*time.Second); f.Event != "" && f.Event != "reconnected" {
				return f
			}
		}
	}
	for _, want := range []string{"entry_appended", "feedback"} {
		if f := event(); f.Event != want {
			t.Fatalf("got %+v, want %s", f, want)
		}
	}
	if r := h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q2"}`); r.Status != 201 {
		t.Fatalf("append: %d %s", r.Status, r.Body)
	}
	if f := event(); f.Event != "entry_appended" || !strings.Contains(f.Data, `"q2"`) {
		t.Fatalf("got %+v, want q2's entry_appended (by the heartbeat re-read)", f)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds, failing after 10 s (a condition, not
// a time limit on the sidecar: Pub/Sub (un)subscribes asynchronously).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 400 {
		if cond() {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("not within 10 s: %s", what)
}

// nodes runs one command on the server, or on every node of a cluster
// (Pub/Sub subscriptions are per node).
func nodes(t *testing.T, srv *redisstoretest.Server, args ...string) []rueidis.RedisResult {
	t.Helper()
	if srv.Cluster != nil {
		var out []rueidis.RedisResult
		for _, addr := range srv.Cluster.Addrs() {
			out = append(out, srv.Cluster.Do(t.Context(), addr, args...))
		}
		return out
	}
	c := srv.Client(t)
	return []rueidis.RedisResult{c.Do(t.Context(), c.B().Arbitrary(args...).Build())}
}

// pubsubChannels is PUBSUB CHANNELS pattern over every node, sorted.
func pubsubChannels(t *testing.T, srv *redisstoretest.Server, pattern string) []string {
	t.Helper()
	var out []string
	for _, r := range nodes(t, srv, "PUBSUB", "CHANNELS", pattern) {
		cs, err := r.AsStrSlice()
		if err != nil {
			t.Fatalf("PUBSUB CHANNELS: %v", err)
		}
		out = append(out, cs...)
	}
	slices.Sort(out)
	return out
}

// numsub is PUBSUB NUMSUB ch summed over every node.
func numsub(t *testing.T, srv *redisstoretest.Server, ch string) int64 {
	t.Helper()
	var n int64
	for _, r := range nodes(t, srv, "PUBSUB", "NUMSUB", ch) {
		arr, err := r.ToArray()
		if err != nil || len(arr) != 2 {
			t.Fatalf("PUBSUB NUMSUB: %v %v", arr, err)
		}
		c, _ := arr[1].AsInt64()
		n += c
	}
	return n
}

// publish is PUBLISH ch "" on every node, its receivers summed (each node
// counts its own subscribers).
func publish(t *testing.T, srv *redisstoretest.Server, ch string) int64 {
	t.Helper()
	var n int64
	for _, r := range nodes(t, srv, "PUBLISH", ch, "") {
		c, err := r.AsInt64()
		if err != nil {
			t.Fatalf("PUBLISH: %v", err)
		}
		n += c
	}
	return n
}

// rawSubscribe subscribes ch on a connection of the test's own; stop
// closes it.
func rawSubscribe(t *testing.T, srv *redisstoretest.Server, ch string) (msgs <-chan rueidis.PubSubMessage, stop func()) {
	t.Helper()
	c := srv.Client(t)
	out := make(chan rueidis.PubSubMessage, 16)
	confirmed := make(chan struct{}, 1)
	dc, _ := c.Dedicate()
	var once sync.Once
	stop = func() { once.Do(dc.Close) }
	t.Cleanup(stop)
	dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) {
			select {
			case out <- m:
			default:
			}
		},
		OnSubscription: func(rueidis.PubSubSubscription) {
			select {
			case confirmed <- struct{}{}:
			default:
			}
		},
	})
	if err := dc.Do(t.Context(), dc.B().Subscribe().Channel(ch).Build()).Error(); err != nil {
		t.Fatalf("SUBSCRIBE %s: %v", ch, err)
	}
	select {
	case <-confirmed:
	case <-time.After(10 * time.Second):
		t.Fatalf("SUBSCRIBE %s not confirmed", ch)
	}
	return out, stop
}
