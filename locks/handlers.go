package locks

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

func respond(w http.ResponseWriter, token string, g *grant) {
	sidecar.WriteJSON(w, http.StatusOK, grantResponse{
		Token: token, FencingToken: g.Fence, Owner: g.Owner,
		ExpiresAt: g.ExpiresAt.Format(timeFormat), TTLMs: g.TTL.Milliseconds(),
		Replicated: g.Replicated,
	})
}

func (m *Module) acquire(w http.ResponseWriter, r *http.Request) error {
	name, err := lockName(r)
	if err != nil {
		return err
	}
	var req acquireRequest
	if err := sidecar.DecodeOptionalJSON(r, &req); err != nil { // every field is optional: no body is {}
		return err
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
	case errors.Is(err, sidecar.ErrShuttingDown):
		// Given up between two tries: nothing was granted to release.
		m.metrics.acquired(outcomeShutdown, waited)
		return err
	case err != nil && ctx.Err() != nil:
		outcome := outcomeCanceled
		switch {
		case errors.Is(context.Cause(r.Context()), sidecar.ErrShuttingDown):
			outcome = outcomeShutdown // cut at the end of the drain
		case r.Context().Err() == nil:
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

func (m *Module) refresh(w http.ResponseWriter, r *http.Request) error {
	name, err := lockName(r)
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
	name, err := lockName(r)
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
	name, err := lockName(r)
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
