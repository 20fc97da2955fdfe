package locks

import (
	"context"
	"time"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// lockWait tries to take the lock, and while it is held and wait allows,
// sleeps until a release message for name or the TTL-based re-check. When
// the host begins to shut down it stops waiting, between two tries (so it
// holds nothing), and returns sidecar.ErrShuttingDown.
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
		case <-m.shuttingDown:
			return nil, nil, sidecar.ErrShuttingDown
		}
	}
}
