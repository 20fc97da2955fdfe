package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// Conn is the sidecar's one Redis connection. It is usable at once: until the
// first connection succeeds, Client answers ErrUnavailable while a goroutine
// keeps dialing with backoff, so the process can serve /healthz and answer
// 503 while Redis is still starting (as happens in Kubernetes). After that,
// rueidis reconnects by itself and losing Redis is never fatal.
type Conn struct {
	opts     Options
	logger   *slog.Logger
	embedded *miniredis.Miniredis
	mode     atomic.Value // rueidis.ClientMode as a string, once connected

	clientOpt rueidis.ClientOption
	client    atomic.Pointer[rueidis.Client]
	lastErr   atomic.Pointer[string]
	refusal   atomic.Pointer[refusalSeen]
	ready     chan struct{}

	// down is set when a call found Redis unavailable; the next successful
	// health check then renews the client, so no connection that died with
	// the old Redis process fails a request after Redis is back.
	down    atomic.Bool
	renewMu sync.Mutex
	retired []rueidis.Client // replaced clients, closed after a grace period

	stop     context.CancelFunc
	wg       sync.WaitGroup
	closeOne sync.Once
}

// Backoff bounds for the start-up dial loop.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// Open validates opts, starts the embedded Redis when none is configured, and
// starts connecting in the background. It fails only on bad options or when
// the embedded server cannot listen; an unreachable Redis is not an error.
func Open(opts Options, logger *slog.Logger) (*Conn, error) {
	embedded := opts.Embedded()
	opts.Standalone = opts.Standalone || embedded
	clientOpt, err := opts.clientOption()
	if err != nil {
		return nil, err
	}
	c := &Conn{opts: opts, logger: logger, ready: make(chan struct{})}
	if embedded {
		m, err := StartEmbedded()
		if err != nil {
			return nil, fmt.Errorf("start embedded redis: %w", err)
		}
		c.embedded = m
		clientOpt.InitAddress = []string{m.Addr()}
		logger.Warn("no REDIS_URL or CACHE_HOST set: using an embedded in-memory Redis; " +
			"data is not shared with other processes and is lost on exit")
	}
	msg := "connecting"
	c.lastErr.Store(&msg)
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.clientOpt = clientOpt
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if c.connectLoop(ctx, clientOpt) {
			c.healthLoop(ctx)
		}
	}()
	return c, nil
}

// HealthInterval is how often the connection checks Redis once connected.
const HealthInterval = 500 * time.Millisecond

// healthLoop pings Redis every HealthInterval: a failure marks the
// connection down, and the first success after that renews the client.
func (c *Conn) healthLoop(ctx context.Context) {
	t := time.NewTicker(HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			_ = c.Ping(pctx)
			cancel()
		}
	}
}

// Up reports whether Redis answered the last check (false before the first
// connection and during an outage).
func (c *Conn) Up() bool { return c.client.Load() != nil && !c.down.Load() }

// ReportUnavailable tells the connection a call found Redis unavailable.
func (c *Conn) ReportUnavailable() {
	if p := c.client.Load(); p != nil {
		c.down.Store(true)
	}
}

// renew replaces the client after an outage: rueidis only notices a
// connection that died with the old Redis process when a call fails on it,
// so without this every idle pooled connection would cost one failed
// request after Redis returns. The old client is closed after a grace
// period for the calls still on it.
func (c *Conn) renew() {
	c.renewMu.Lock()
	defer c.renewMu.Unlock()
	if !c.down.Load() {
		return
	}
	fresh, err := rueidis.NewClient(c.clientOpt)
	if err != nil {
		return // still down; the next health check tries again
	}
	old := c.client.Swap(&fresh)
	c.down.Store(false)
	c.logger.Info("redis reachable again: connections renewed", "redis", c.opts.Redacted())
	if old != nil {
		c.retired = append(c.retired, *old)
		time.AfterFunc(renewGrace, func() {
			c.renewMu.Lock()
			defer c.renewMu.Unlock()
			for i, r := range c.retired {
				if r == *old {
					c.retired = append(c.retired[:i], c.retired[i+1:]...)
					r.Close()
					return
				}
			}
		})
	}
}

// renewGrace is how long a replaced client stays open for calls on it.
const renewGrace = 15 * time.Second

// StartEmbedded starts a miniredis on a loopback port whose key expiry follows
// the wall clock, as a real Redis does (miniredis otherwise moves TTLs only
// when told to with FastForward).
func StartEmbedded() (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return m, nil
}

// connectLoop dials until the first connection succeeds (true) or ctx ends.
func (c *Conn) connectLoop(ctx context.Context, opt rueidis.ClientOption) bool {
	delay := backoffMin
	for attempt := 1; ; attempt++ {
		client, err := rueidis.NewClient(opt)
		if err == nil {
			c.mode.Store(string(client.Mode()))
			c.client.Store(&client)
			close(c.ready)
			c.logger.Info("redis connected", "redis", c.opts.Redacted(), "mode", c.Mode(), "attempts", attempt)
			return true
		}
		msg := err.Error()
		c.lastErr.Store(&msg)
		// Jitter (±20%) keeps a fleet of pods from dialing in lockstep.
		wait := time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64()))
		c.logger.Warn("redis not reachable, retrying", "redis", c.opts.Redacted(),
			"attempt", attempt, "retry_in", wait.Round(time.Millisecond).String(), "err", msg)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		delay = min(delay*2, backoffMax)
	}
}

// Ready is closed once the first connection to Redis succeeded.
func (c *Conn) Ready() <-chan struct{} { return c.ready }

// Mode is "embedded", or once connected what rueidis found: "standalone",
// "cluster" or "sentinel"; "" before the first connection.
func (c *Conn) Mode() string {
	if c.embedded != nil {
		return "embedded"
	}
	m, _ := c.mode.Load().(string)
	return m
}

// Cluster reports whether the connected Redis is a Redis Cluster.
func (c *Conn) Cluster() bool { return c.Mode() == string(rueidis.ClientModeCluster) }

// Embedded returns the in-process server in embedded mode, else nil.
func (c *Conn) Embedded() *miniredis.Miniredis { return c.embedded }

// LastError describes why the first connection has not succeeded yet.
func (c *Conn) LastError() string { return *c.lastErr.Load() }

// Client returns the connected client, or an ErrUnavailable error while the
// first connection is still being made.
func (c *Conn) Client() (rueidis.Client, error) {
	if p := c.client.Load(); p != nil {
		return *p, nil
	}
	return nil, fmt.Errorf("%w: not connected yet: %s", ErrUnavailable, c.LastError())
}

// Ping checks that Redis answers. After an outage, the first successful
// ping renews the client before it returns.
func (c *Conn) Ping(ctx context.Context) error {
	client, err := c.Client()
	if err != nil {
		return err
	}
	if err := ping(ctx, client); err != nil {
		if IsUnavailable(err) {
			c.down.Store(true)
		}
		return Wrap("ping", err)
	}
	if c.down.Load() {
		c.renew()
		if c.down.Load() {
			return fmt.Errorf("%w: renewing connections after an outage", ErrUnavailable)
		}
	}
	return nil
}

// ping checks that Redis can serve the sidecar. On a cluster a PING goes to
// whichever node the client picks, possibly a dead master it has not yet
// dropped from its map after a failover; when it fails, a read of one key
// of every bucket decides instead (Redis is up when the master of every
// bucket's slot answers, which is what every request needs). A healthy
// cluster thus costs one PING per check, not one read per bucket.
func ping(ctx context.Context, client rueidis.Client) error {
	err := client.Do(ctx, client.B().Ping().Build()).Error()
	if err == nil || client.Mode() != rueidis.ClientModeCluster {
		return err
	}
	l := Layout{Cluster: true}
	cmds := make(rueidis.Commands, l.Buckets())
	for b := range cmds {
		cmds[b] = client.B().Exists().Key(l.Global(b).Expiry).Build()
	}
	for _, r := range client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the dial loop, closes the client and stops the embedded server.
func (c *Conn) Close() {
	c.closeOne.Do(func() {
		c.stop()
		c.wg.Wait()
		if p := c.client.Load(); p != nil {
			(*p).Close()
		}
		c.renewMu.Lock()
		for _, r := range c.retired {
			r.Close()
		}
		c.retired = nil
		c.renewMu.Unlock()
		if c.embedded != nil {
			c.embedded.Close()
		}
	})
}

// refusalSeen is the last refusal Redis gave a call through this connection.
type refusalSeen struct {
	RedisRefusal
	at time.Time
}

// RefusalWindow is how long a refusal keeps /readyz not ready: the health
// check's PING cannot see most of them (a full Redis still answers PING), so
// readiness reports what calls met within this window.
const RefusalWindow = 5 * time.Second

// ReportRefusal records that Redis refused a call (see Refused); an outage
// kind also marks the connection down, so the health check renews it.
func (c *Conn) ReportRefusal(r RedisRefusal) {
	c.refusal.Store(&refusalSeen{RedisRefusal: r, at: time.Now()})
	if r.Outage {
		c.ReportUnavailable()
	}
}

// RecentRefusal returns the refusal calls met within RefusalWindow, if any.
func (c *Conn) RecentRefusal() (RedisRefusal, bool) {
	r := c.refusal.Load()
	if r == nil || time.Since(r.at) > RefusalWindow {
		return RedisRefusal{}, false
	}
	return r.RedisRefusal, true
}
