package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ErrShuttingDown is what a handler returns when it gives up a wait because
// the host began to shut down (Deps.ShuttingDown closed); the host answers
// it 503 shutting_down with Retry-After, as it answers every request still
// running at the end of the drain (its context is then cancelled with this
// cause: context.Cause).
var ErrShuttingDown = errors.New("the sidecar is shutting down")

// CloseTimeout bounds each module's Close: a deadline of its own, not what
// the drain (ShutdownGrace) left of its own.
const CloseTimeout = 5 * time.Second

// cutMargin is the end of the drain kept for the requests still running
// then: their contexts are cancelled (cause ErrShuttingDown) that long
// before ShutdownGrace runs out, so they answer 503 shutting_down instead
// of losing their connection with no answer.
const cutMargin = 2 * time.Second

// shuttingDown is the answer to a request the sidecar will not serve because
// it is shutting down.
func shuttingDown() *Error {
	return Errorf(http.StatusServiceUnavailable, "shutting_down",
		"the sidecar is shutting down; retry shortly (on another sidecar, or on this one once it restarted)")
}

// refuseWhenStopping answers 503 shutting_down, before any work, to a
// request that arrives once shutdown began: the listener stays open while
// the requests in flight finish, so a late caller gets an answer, not a
// connection refused or cut.
func (h *Host) refuseWhenStopping(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-h.stopping.Done():
			WriteError(w, shuttingDown())
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// drain is the shutdown of a host that served: streams and waits end at
// once (503 shutting_down for a wait), new requests are answered 503
// shutting_down, the requests in flight finish, those still running
// cutMargin before ShutdownGrace is out are cancelled and answer 503
// shutting_down; then the listeners close. Every answer from the start of
// the drain closes its connection.
func (h *Host) drain(ctx context.Context, limited *limitListener, api, ops *http.Server) {
	h.logger.Info("shutting down", "grace", ShutdownGrace.String())
	end := time.Now().Add(ShutdownGrace)
	h.beginStop()
	api.SetKeepAlivesEnabled(false)
	if !h.awaitIdle(end.Add(-cutMargin)) {
		h.logger.Warn("shutdown: requests still running near the end of the drain are cancelled and answered 503 shutting_down",
			"requests", h.active.Load())
		h.cutRequests(ErrShuttingDown)
		limited.cutUploads()
		h.awaitIdle(end)
	}
	shutCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), end)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range []*http.Server{api, ops} {
		wg.Go(func() {
			if err := srv.Shutdown(shutCtx); err != nil {
				h.logger.Warn("shutdown: in-flight requests cut off", "err", err)
				_ = srv.Close()
			}
		})
	}
	wg.Wait()
}

// awaitIdle waits until no request is in a module's route (streams aside),
// or until the given time; it reports whether none is.
func (h *Host) awaitIdle(until time.Time) bool {
	for h.active.Load() > 0 {
		if !time.Now().Before(until) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// closeModules closes every module at once, each with a context of its own
// bounded by CloseTimeout, and waits for them (at most CloseTimeout): a
// module that fails or overstays is logged and holds up no other.
func (h *Host) closeModules() {
	var wg sync.WaitGroup
	for _, m := range h.modules {
		if c, ok := m.(Closer); ok {
			wg.Go(func() {
				if err := closeOne(c); err != nil {
					h.logger.Warn("module close failed", "module", m.Name(), "err", err)
				}
			})
		}
	}
	wg.Wait()
}

// closeOne runs c.Close with a fresh CloseTimeout deadline, and stops
// waiting for it at that deadline even if Close does not honour it.
func closeOne(c Closer) error {
	ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Close(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("Close did not return within %s", CloseTimeout)
	}
}
