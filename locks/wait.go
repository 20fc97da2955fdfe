package locks

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// MaxRecheck bounds the safety-net re-check of a blocked waiter. Release
// wakes waiters through Pub/Sub; the re-check is only for what Pub/Sub
// cannot see: a lock that expired, a redis-py holder releasing (a plain
// DEL, nothing published), a message lost while the subscription
// reconnected (which also wakes every waiter once). So a waiter tries again
// just after the holder's TTL runs out (the acquire script reads the PTTL),
// and otherwise at the latest after MaxRecheck, jittered down to 3/4 of it:
// while the holder's TTL is long a waiter costs Redis one script every
// 1.5-2 s, and a redis-py release is noticed within 2 s.
const MaxRecheck = 2 * time.Second

// recheckAfter is how long a waiter sleeps (unless woken) after finding the
// lock held with the given remaining TTL (-1: the key has no expiry).
func recheckAfter(ttl time.Duration) time.Duration {
	net := MaxRecheck*3/4 + rand.N(MaxRecheck/4)
	switch {
	case ttl == 0:
		// Expired between two reads, or a non-expiring key racing its
		// delete: look again very soon.
		return time.Millisecond + rand.N(4*time.Millisecond)
	case ttl > 0 && ttl < net:
		// Wake just after it expires; a few ms of jitter keep several
		// waiters from arriving in the same instant.
		return ttl + time.Millisecond + rand.N(5*time.Millisecond)
	default:
		return net
	}
}

// notifier multiplexes the sidecar's single subscription to ReleaseChannel
// over every waiter: a waiter watches a name, and each release message for
// that name closes the channel its watchers hold (a new generation begins).
type notifier struct {
	mu    sync.Mutex
	names map[string]*watched
}

type watched struct {
	ch   chan struct{} // closed at the next release of the name
	refs int
}

func newNotifier() *notifier { return &notifier{names: map[string]*watched{}} }

// watch registers interest in name until the returned stop is called.
func (n *notifier) watch(name string) (stop func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.names[name]
	if w == nil {
		w = &watched{ch: make(chan struct{})}
		n.names[name] = w
	}
	w.refs++
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if w.refs--; w.refs == 0 {
			delete(n.names, name)
		}
	}
}

// next is closed at the next release of name after this call. Take it before
// trying the lock, so a release between the try and the wait is not missed.
// The name must be watched.
func (n *notifier) next(name string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.names[name].ch
}

// released wakes the watchers of name.
func (n *notifier) released(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w := n.names[name]; w != nil {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

// releasedAll wakes every watcher (after a subscription gap).
func (n *notifier) releasedAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, w := range n.names {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

// waiters is the number of names watched, for tests.
func (n *notifier) watchedNames() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.names)
}

// subscribe keeps the one subscription to ReleaseChannel until ctx ends,
// resubscribing with jittered backoff when the connection breaks.
func (n *notifier) subscribe(ctx context.Context, redis *redisstore.Conn, logger *slog.Logger) {
	select {
	case <-redis.Ready():
	case <-ctx.Done():
		return
	}
	delay := 100 * time.Millisecond
	for {
		start := time.Now()
		// The connection's current client: after an outage or a cluster
		// failover the Conn renews its client and closes the old one.
		c, err := redis.Client()
		if err != nil {
			return // unreachable: Ready is closed
		}
		// A connection of its own: a RESP2 server (or miniredis) refuses
		// other commands on a subscribed connection.
		dc, release := c.Dedicate()
		err = dc.Receive(ctx, dc.B().Subscribe().Channel(ReleaseChannel).Build(), func(msg rueidis.PubSubMessage) {
			n.released(msg.Message)
		})
		release()
		if ctx.Err() != nil {
			return
		}
		// Messages may have been lost in the gap: let every waiter look.
		n.releasedAll()
		if time.Since(start) > 10*time.Second {
			delay = 100 * time.Millisecond
		}
		logger.Warn("lock release subscription lost; waiters fall back to re-checks until it returns",
			"channel", ReleaseChannel, "err", err, "retry_in", delay.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay/2 + rand.N(delay/2+1)):
		}
		delay = min(delay*2, 5*time.Second)
	}
}
