package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// LeaseOptions are the options of Acquire. Zero values take the sidecar's
// defaults.
type LeaseOptions struct {
	Owner string        // free text shown to inspectors and in conflicts
	TTL   time.Duration // lease TTL; 0 = AGENTIC_LOCK_EXPIRE; millisecond precision
	Wait  time.Duration // how long to wait for a held lock; 0 = fail at once with ErrHeld
	// RefreshEvery is the period of the background refresh; 0 = TTL/3.
	// Negative turns background refresh off.
	RefreshEvery time.Duration
}

// Lease is a held lock that refreshes itself in the background until
// Release, and reports its loss on Done, Err and Context. Its methods are
// safe for concurrent use.
type Lease struct {
	Name  string
	Token string
	Fence int64 // fencing token: pass it to the protected resource
	Owner string

	c         *Client
	ttl       time.Duration
	stop      chan struct{} // closed by Release to end the refresher
	stopOnce  sync.Once
	wg        sync.WaitGroup
	done      chan struct{} // closed when the lease ends (released or lost)
	once      sync.Once
	mu        sync.Mutex
	err       error
	expiresAt time.Time
}

// Acquire takes the lock name, waiting up to opts.Wait, and starts the
// lease's background refresh. ctx bounds the call (a cancelled wait frees
// everything on the sidecar), not the lease. A lock held for the whole wait
// is an error matching ErrHeld.
func (c *Client) Acquire(ctx context.Context, name string, opts LeaseOptions) (*Lease, error) {
	req := AcquireLockRequest{Owner: opts.Owner, WaitMs: max(opts.Wait.Milliseconds(), 0)}
	if opts.TTL > 0 {
		req.TTLMs = max(opts.TTL.Milliseconds(), 1)
	}
	sent := time.Now()
	g, err := c.AcquireLock(ctx, name, req)
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", name, err)
	}
	l := &Lease{
		Name: name, Token: g.Token, Fence: g.FencingToken, Owner: g.Owner,
		c: c, ttl: time.Duration(g.TTLMs) * time.Millisecond, expiresAt: g.ExpiresAt,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	every := opts.RefreshEvery
	if every == 0 {
		every = l.ttl / 3
	}
	if every > 0 {
		l.wg.Add(1)
		go l.refreshLoop(every, sent.Add(l.ttl))
	}
	return l, nil
}

// ExpiresAt is when the lease expires unless refreshed, by Redis's clock, as
// of the last grant or refresh.
func (l *Lease) ExpiresAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expiresAt
}

// Done is closed when the lease ends: released, or lost.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease is held, ErrReleased after Release, and an
// error wrapping ErrLost once it was lost.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Context returns a context derived from parent that is cancelled when the
// lease ends, with the lease's Err as its cause (context.Cause).
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-l.done:
			cancel(l.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

func (l *Lease) end(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(l.done)
	})
}

// refreshLoop renews the lease every period. A 409 ends it as lost at once;
// other failures are retried (sooner) until the local deadline, computed
// from when the last successful call was sent, has passed.
func (l *Lease) refreshLoop(every time.Duration, deadline time.Time) {
	defer l.wg.Done()
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-timer.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		g, err := l.c.RefreshLock(ctx, l.Name, RefreshLockRequest{Token: l.Token, TTLMs: l.ttl.Milliseconds()})
		cancel()
		switch {
		case err == nil:
			deadline = sent.Add(time.Duration(g.TTLMs) * time.Millisecond)
			l.mu.Lock()
			l.expiresAt = g.ExpiresAt
			l.mu.Unlock()
			timer.Reset(every)
		case errors.Is(err, ErrLost):
			l.end(fmt.Errorf("lease %s: %w", l.Name, err))
			return
		case !time.Now().Before(deadline):
			l.end(fmt.Errorf("lease %s: %w: not refreshed before its TTL ran out: %w", l.Name, ErrLost, err))
			return
		default:
			select {
			case <-l.stop:
				return
			default:
			}
			// Retry soon, well before the deadline.
			retry := min(every/4+rand.N(every/4+1), time.Until(deadline)/2)
			timer.Reset(max(retry, 10*time.Millisecond))
		}
	}
}

// Release stops the refresh and frees the lock. It returns an error
// wrapping ErrNotHeld or ErrNotOwner when the lease had already been lost
// (the lock of another holder is never touched), and ErrReleased when
// called again.
func (l *Lease) Release(ctx context.Context) error {
	first := false
	l.stopOnce.Do(func() { close(l.stop); first = true })
	if !first {
		return fmt.Errorf("release %s: %w", l.Name, ErrReleased)
	}
	l.wg.Wait()
	if err := l.c.ReleaseLock(ctx, l.Name, l.Token); err != nil {
		if errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNotOwner) {
			l.end(fmt.Errorf("lease %s: %w", l.Name, ErrLost))
		}
		return fmt.Errorf("release %s: %w", l.Name, err)
	}
	l.end(ErrReleased)
	return nil
}
