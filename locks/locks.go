// Package locks is the sidecar's lock module (docs/locks.md): named locks for
// processes that take turns on shared work, interoperable with redis-py's
// Lock, with fencing tokens, refresh, and blocking waits woken by Pub/Sub.
//
// A lock named n is the Redis key n holding its holder's random token, set
// with SET n token NX PX ttl, exactly as redis-py stores it. Its companions
// {n}:fence (the fencing counter, INCR on every grant, never expiring) and
// {n}:meta (owner, fence and ttl of a sidecar holder, expiring with the lock)
// share n's Redis Cluster slot. Every state change is one Lua script (see
// lua/lock_*.lua); expiry is always relative (PX), never the pod's clock.
//
// docs/locks.md has the API, the guarantees and what a failover can do.
package locks

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "locks", New: New}

// MaxOwnerLength is the longest owner a caller may give.
const MaxOwnerLength = 256

// MaxTokenLength is the longest token accepted in refresh and release (ours
// are 32 characters; redis-py's too; other clients may use longer ones).
const MaxTokenLength = 256

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
		cfg:     cfg,
		store:   store{redis: deps.Redis, replicaWait: cfg.ReplicaWait()},
		notify:  newNotifier(),
		metrics: newMetrics(),
		logger:  logger,
		attempt: deps.RequestTimeout,
		stop:    cancel,
		done:    make(chan struct{}),
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

type acquireRequest struct {
	Owner  string `json:"owner"`
	TTLMs  *int64 `json:"ttl_ms"`
	WaitMs *int64 `json:"wait_ms"`
}

type grantResponse struct {
	Token        string `json:"token"`
	FencingToken int64  `json:"fencing_token"`
	Owner        string `json:"owner"`
	ExpiresAt    string `json:"expires_at"` // Redis TIME + ttl, RFC 3339 UTC with milliseconds
	TTLMs        int64  `json:"ttl_ms"`
	// Replicated: a replica acknowledged the grant within
	// SIDECAR_LOCK_REPLICA_WAIT_MS (absent when that wait is off).
	Replicated *bool `json:"replicated,omitempty"`
}

type tokenRequest struct {
	Token string `json:"token"`
	TTLMs *int64 `json:"ttl_ms"`
}

type releaseRequest struct {
	Token string `json:"token"`
}

type releaseResponse struct {
	Released bool `json:"released"`
}

type inspectResponse struct {
	Held         bool   `json:"held"`
	Owner        string `json:"owner,omitempty"`
	TTLMs        *int64 `json:"ttl_ms,omitempty"` // -1: the key has no expiry
	FencingToken int64  `json:"fencing_token,omitempty"`
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func respond(w http.ResponseWriter, token string, g *grant) {
	sidecar.WriteJSON(w, http.StatusOK, grantResponse{
		Token: token, FencingToken: g.Fence, Owner: g.Owner,
		ExpiresAt: g.ExpiresAt.Format(timeFormat), TTLMs: g.TTL.Milliseconds(),
		Replicated: g.Replicated,
	})
}

func (m *Module) acquire(w http.ResponseWriter, r *http.Request) error {
	name, err := sidecar.PathID(r, "name")
	if err != nil {
		return err
	}
	var req acquireRequest
	if r.ContentLength != 0 { // every field is optional: no body is {}
		if err := sidecar.DecodeJSON(r, &req); err != nil {
			return err
		}
	}
	ttl, err := m.ttl(req.TTLMs, false)
	if err != nil {
		return err
	}
	wait, err := m.wait(req.WaitMs)
	if err != nil {
		return err
	}
	if err := checkOwner(req.Owner); err != nil {
		return err
	}

	ctx := r.Context()
	if m.attempt > 0 {
		// The route's deadline covers the longest wait allowed; this one
		// keeps a slow Redis from holding an acquire past its own wait.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait+m.attempt)
		defer cancel()
	}
	token := newToken()
	start := time.Now()
	g, h, err := m.lockWait(ctx, name, token, req.Owner, ttl, wait)
	waited := time.Since(start)
	switch {
	case err != nil && ctx.Err() != nil:
		outcome := outcomeCanceled
		if r.Context().Err() == nil {
			outcome = outcomeError // our deadline, not the caller's hang-up
		}
		m.metrics.acquired(outcome, waited)
		// The script may have run before the hang-up cut its reply.
		m.releaseAbandoned(ctx, name, token)
		return ctx.Err()
	case err != nil:
		m.metrics.acquired(outcomeError, waited)
		return err
	case g == nil:
		outcome := outcomeConflict
		if wait > 0 {
			outcome = outcomeTimeout
		}
		m.metrics.acquired(outcome, waited)
		return heldError(name, h, wait)
	}
	if ctx.Err() != nil {
		// Granted as the caller hung up: nobody would ever release it.
		m.metrics.acquired(outcomeCanceled, waited)
		m.releaseAbandoned(ctx, name, token)
		return ctx.Err()
	}
	m.metrics.acquired(outcomeAcquired, waited)
	m.metrics.held.add(name, token, ttl)
	respond(w, token, g)
	return nil
}

// releaseAbandoned frees a lock granted to a caller that is gone (or got
// 503 at its deadline), in the background: on a slow Redis the release can
// take its whole 2 s, and the 503 must not wait for it. Close waits for it.
func (m *Module) releaseAbandoned(ctx context.Context, name, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	m.bg.Go(func() {
		defer cancel()
		if _, err := m.store.release(ctx, name, token); err != nil {
			m.logger.Warn("releasing a lock granted to a caller that hung up; it frees at its TTL", "err", err)
		}
	})
}

func heldError(name string, h *holder, wait time.Duration) error {
	e := sidecar.Conflict("lock_held", "lock %s is held", name)
	if h == nil {
		return e
	}
	if h.Owner != "" {
		e.Message += " by " + quote(h.Owner)
	}
	if h.TTL >= 0 {
		e.Message += ", expiring in " + h.TTL.String()
	} else {
		e.Message += ", with no expiry"
	}
	if wait > 0 {
		e.Message += " (waited " + wait.String() + ")"
	}
	return e
}

func quote(s string) string { return strconv.Quote(s) }

// lockWait tries to take the lock, and while it is held and wait allows,
// sleeps until a release message for name or the TTL-based re-check.
func (m *Module) lockWait(ctx context.Context, name, token, owner string, ttl, wait time.Duration) (*grant, *holder, error) {
	if wait <= 0 {
		return m.store.tryAcquire(ctx, name, token, owner, ttl)
	}
	deadline := time.Now().Add(wait)
	stop := m.notify.watch(name)
	defer stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	counted := false
	defer func() {
		if counted {
			m.metrics.waiting.Dec()
		}
	}()
	for {
		released := m.notify.next(name) // before the try: no release is missed
		g, h, err := m.store.tryAcquire(ctx, name, token, owner, ttl)
		if err != nil || g != nil {
			return g, nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, h, nil
		}
		if !counted {
			counted = true
			m.metrics.waiting.Inc()
		}
		timer.Reset(min(recheckAfter(h.TTL), left))
		select {
		case <-released:
			m.metrics.wakeups.WithLabelValues("released").Inc()
		case <-timer.C:
			m.metrics.wakeups.WithLabelValues("recheck").Inc()
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (m *Module) refresh(w http.ResponseWriter, r *http.Request) error {
	name, err := sidecar.PathID(r, "name")
	if err != nil {
		return err
	}
	var req tokenRequest
	if err := sidecar.DecodeJSON(r, &req); err != nil {
		return err
	}
	if err := checkToken(req.Token); err != nil {
		return err
	}
	ttl, err := m.ttl(req.TTLMs, true)
	if err != nil {
		return err
	}
	g, ok, err := m.store.refresh(r.Context(), name, req.Token, ttl, m.cfg.DefaultTTL())
	if err != nil {
		m.metrics.refreshFailures.WithLabelValues("error").Inc()
		return err
	}
	if !ok {
		m.metrics.refreshFailures.WithLabelValues("lost").Inc()
		m.metrics.held.remove(name, req.Token)
		return sidecar.Conflict("lock_lost", "lock %s is not held with this token (expired, released or taken by another holder)", name)
	}
	m.metrics.held.refreshed(name, req.Token, g.TTL)
	respond(w, req.Token, g)
	return nil
}

func (m *Module) release(w http.ResponseWriter, r *http.Request) error {
	name, err := sidecar.PathID(r, "name")
	if err != nil {
		return err
	}
	var req releaseRequest
	if err := sidecar.DecodeJSON(r, &req); err != nil {
		return err
	}
	if err := checkToken(req.Token); err != nil {
		return err
	}
	n, err := m.store.release(r.Context(), name, req.Token)
	if err != nil {
		m.metrics.releases.WithLabelValues("error").Inc()
		return err
	}
	switch n {
	case released:
		m.metrics.releases.WithLabelValues("released").Inc()
		m.metrics.held.remove(name, req.Token)
		sidecar.WriteJSON(w, http.StatusOK, releaseResponse{Released: true})
		return nil
	case notHeld:
		m.metrics.releases.WithLabelValues("not_held").Inc()
		m.metrics.held.remove(name, req.Token)
		return sidecar.Errorf(http.StatusNotFound, "not_held", "lock %s is not held by anyone", name)
	default:
		m.metrics.releases.WithLabelValues("not_owner").Inc()
		m.metrics.held.remove(name, req.Token)
		return sidecar.Conflict("not_owner", "lock %s is held by another token; it was left untouched", name)
	}
}

func (m *Module) inspect(w http.ResponseWriter, r *http.Request) error {
	name, err := sidecar.PathID(r, "name")
	if err != nil {
		return err
	}
	h, err := m.store.inspect(r.Context(), name)
	if err != nil {
		return err
	}
	if h == nil {
		sidecar.WriteJSON(w, http.StatusOK, inspectResponse{})
		return nil
	}
	ttl := h.TTL.Milliseconds()
	if h.TTL < 0 {
		ttl = -1
	}
	sidecar.WriteJSON(w, http.StatusOK, inspectResponse{Held: true, Owner: h.Owner, TTLMs: &ttl, FencingToken: h.Fence})
	return nil
}

// ttl validates ttl_ms; absent is AGENTIC_LOCK_EXPIRE, or 0 ("as acquired")
// for a refresh.
func (m *Module) ttl(v *int64, refresh bool) (time.Duration, error) {
	if v == nil {
		if refresh {
			return 0, nil
		}
		return m.cfg.DefaultTTL(), nil
	}
	if *v < 1 || *v > MaxTTL.Milliseconds() {
		return 0, sidecar.BadRequest("invalid_field", "ttl_ms must be 1-%d (24 h)", MaxTTL.Milliseconds())
	}
	return time.Duration(*v) * time.Millisecond, nil
}

func (m *Module) wait(v *int64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 || *v > m.cfg.MaxWait().Milliseconds() {
		return 0, sidecar.BadRequest("invalid_field", "wait_ms must be 0-%d (AGENTIC_LOCK_TIMEOUT)", m.cfg.MaxWait().Milliseconds())
	}
	return time.Duration(*v) * time.Millisecond, nil
}

func checkOwner(s string) error {
	if len(s) > MaxOwnerLength || !printable(s) {
		return sidecar.BadRequest("invalid_field", "owner must be at most %d bytes of printable UTF-8", MaxOwnerLength)
	}
	return nil
}

func checkToken(s string) error {
	if s == "" || len(s) > MaxTokenLength || !printable(s) {
		return sidecar.BadRequest("invalid_field", "token must be 1-%d printable characters (the token the acquire returned)", MaxTokenLength)
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Interface guards.
var (
	_ sidecar.Module    = (*Module)(nil)
	_ sidecar.Collector = (*Module)(nil)
	_ sidecar.Closer    = (*Module)(nil)
)
