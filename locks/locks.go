// Package locks is the sidecar's lock module (docs/locks.md): named locks for
// processes that take turns on shared work, interoperable with redis-py's
// Lock, with fencing tokens, refresh, and blocking waits woken by Pub/Sub.
//
// A lock named n is the Redis key n holding its holder's random token, set
// with SET n token NX PX ttl, exactly as redis-py stores it. Its companions
// {n}:fence (the last fencing token, max(last + 1, Redis TIME in µs), kept
// FenceTTL after the last grant) and
// {n}:meta (owner, fence and ttl of a sidecar holder, expiring with the lock)
// share n's Redis Cluster slot. Every state change is one Lua script (see
// lock_*.lua in this package); expiry is always relative (PX), never the pod's clock.
//
// docs/locks.md has the API, the guarantees and what a failover can do.
package locks

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "locks", New: New}

// routeMargin is added to AGENTIC_LOCK_TIMEOUT for the acquire route's
// deadline, so the host never cuts a wait the caller was allowed.
const routeMargin = 10 * time.Second

// Module serves /v1/locks.
type Module struct {
	cfg     Config
	store   store
	notify  *notifier
	metrics *metrics
	logger  *slog.Logger
	// attempt is SIDECAR_REQUEST_TIMEOUT: an acquire answers within
	// wait_ms plus this, whatever the route's longer deadline allows.
	attempt time.Duration
	bg      sync.WaitGroup // releases of abandoned grants
	// shuttingDown closes when the host begins to shut down: a waiter
	// stops waiting and is answered 503 shutting_down.
	shuttingDown <-chan struct{}

	stop context.CancelFunc
	done chan struct{}
}

// New parses AGENTIC_LOCK_EXPIRE and AGENTIC_LOCK_TIMEOUT and starts the one
// subscription that wakes waiters (it waits for Redis by itself).
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	cfg, err := LoadConfig(deps.Env)
	if err != nil {
		return nil, err
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Module{
		cfg:          cfg,
		store:        store{redis: deps.Redis, replicaWait: cfg.ReplicaWait()},
		notify:       newNotifier(),
		metrics:      newMetrics(),
		logger:       logger,
		attempt:      deps.RequestTimeout,
		shuttingDown: deps.ShuttingDown,
		stop:         cancel,
		done:         make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		m.notify.subscribe(ctx, deps.Redis, logger)
	}()
	return m, nil
}

// Name is "locks".
func (m *Module) Name() string { return "locks" }

// Routes are the four calls of docs/locks.md and openapi/openapi.json.
func (m *Module) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST /v1/locks/{name}", Handler: m.acquire, Timeout: m.cfg.MaxWait() + routeMargin},
		{Pattern: "POST /v1/locks/{name}/refresh", Handler: m.refresh},
		{Pattern: "DELETE /v1/locks/{name}", Handler: m.release},
		{Pattern: "GET /v1/locks/{name}", Handler: m.inspect},
	}
}

// Collectors are the sidecar_lock_* metrics.
func (m *Module) Collectors() []prometheus.Collector { return m.metrics.collectors() }

// Close ends the release subscription.
func (m *Module) Close(ctx context.Context) error {
	m.stop()
	done := make(chan struct{})
	go func() { <-m.done; m.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Interface guards.
var (
	_ sidecar.Module    = (*Module)(nil)
	_ sidecar.Collector = (*Module)(nil)
	_ sidecar.Closer    = (*Module)(nil)
)
