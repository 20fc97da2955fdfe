// Package client is the Go client of the sidecar's locks API: Acquire
// returns a Lease that refreshes itself in the background until Release,
// and reports its loss on Done / Err (or through a context from Context).
//
//	c := client.New("http://127.0.0.1:7480")
//	lease, err := c.Acquire(ctx, "graph-writes", client.Options{Wait: time.Minute})
//	if err != nil { ... }                  // client.ErrHeld: not acquired within Wait
//	defer lease.Release(context.Background())
//	ctx, cancel := lease.Context(ctx)      // cancelled if the lease is lost
//	defer cancel()
//	write(ctx, lease.Fence)                // pass the fencing token to the resource
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Errors, matched with errors.Is.
var (
	// ErrHeld: the lock was held for the whole wait (409 lock_held).
	ErrHeld = errors.New("client: lock held")
	// ErrLost: the lease's token no longer holds the lock (409 lock_lost),
	// or it could not be refreshed before its TTL ran out.
	ErrLost = errors.New("client: lock lost")
	// ErrNotHeld: release found nobody holding the lock (404 not_held).
	ErrNotHeld = errors.New("client: lock not held")
	// ErrNotOwner: release found another holder (409 not_owner).
	ErrNotOwner = errors.New("client: lock held by another owner")
	// ErrReleased is Err of a lease after Release.
	ErrReleased = errors.New("client: lease released")
)

// APIError is an error answer of the sidecar.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("sidecar: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is maps the lock codes to the package's sentinel errors.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrHeld:
		return e.Code == "lock_held"
	case ErrLost:
		return e.Code == "lock_lost"
	case ErrNotHeld:
		return e.Code == "not_held"
	case ErrNotOwner:
		return e.Code == "not_owner"
	}
	return false
}

// Client calls one sidecar's locks API.
type Client struct {
	base  string
	http  *http.Client
	token string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient uses hc instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithBearerToken sends SIDECAR_API_TOKEN with every call.
func WithBearerToken(token string) Option { return func(c *Client) { c.token = token } }

// New returns a client of the sidecar at baseURL ("http://127.0.0.1:7480").
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Options of Acquire. Zero values take the sidecar's defaults.
type Options struct {
	Owner string        // free text shown to inspectors and in conflicts
	TTL   time.Duration // lease TTL; 0 = AGENTIC_LOCK_EXPIRE; millisecond precision
	Wait  time.Duration // how long to wait for a held lock; 0 = fail at once with ErrHeld
	// RefreshEvery is the period of the background refresh; 0 = TTL/3.
	// Negative turns background refresh off.
	RefreshEvery time.Duration
}

// Lease is a held lock. Its methods are safe for concurrent use.
type Lease struct {
	Name  string
	Token string
	Fence int64 // fencing token: pass it to the protected resource
	Owner string

	c         *Client
	ttl       time.Duration
	stop      chan struct{} // closed by Release to end the refresher
	wg        sync.WaitGroup
	done      chan struct{} // closed when the lease ends (released or lost)
	once      sync.Once
	mu        sync.Mutex
	err       error
	expiresAt time.Time
}

type grantBody struct {
	Token        string `json:"token"`
	FencingToken int64  `json:"fencing_token"`
	Owner        string `json:"owner"`
	ExpiresAt    string `json:"expires_at"`
	TTLMs        int64  `json:"ttl_ms"`
}

// Acquire takes the lock name, waiting up to opts.Wait, and starts the
// lease's background refresh. ctx bounds the call (a cancelled wait frees
// everything on the sidecar), not the lease.
func (c *Client) Acquire(ctx context.Context, name string, opts Options) (*Lease, error) {
	body := map[string]any{}
	if opts.Owner != "" {
		body["owner"] = opts.Owner
	}
	if opts.TTL > 0 {
		body["ttl_ms"] = max(opts.TTL.Milliseconds(), 1)
	}
	if opts.Wait > 0 {
		body["wait_ms"] = opts.Wait.Milliseconds()
	}
	sent := time.Now()
	var g grantBody
	if err := c.call(ctx, http.MethodPost, name, "", body, &g); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", name, err)
	}
	l := &Lease{
		Name: name, Token: g.Token, Fence: g.FencingToken, Owner: g.Owner,
		c: c, ttl: time.Duration(g.TTLMs) * time.Millisecond,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	l.expiresAt, _ = time.Parse(time.RFC3339Nano, g.ExpiresAt)
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
		var g grantBody
		err := l.c.call(ctx, http.MethodPost, l.Name, "/refresh", map[string]any{"token": l.Token, "ttl_ms": l.ttl.Milliseconds()}, &g)
		cancel()
		switch {
		case err == nil:
			deadline = sent.Add(time.Duration(g.TTLMs) * time.Millisecond)
			if t, perr := time.Parse(time.RFC3339Nano, g.ExpiresAt); perr == nil {
				l.mu.Lock()
				l.expiresAt = t
				l.mu.Unlock()
			}
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
// (the lock of another holder is never touched).
func (l *Lease) Release(ctx context.Context) error {
	select {
	case <-l.stop:
		return fmt.Errorf("release %s: %w", l.Name, ErrReleased)
	default:
		close(l.stop)
	}
	l.wg.Wait()
	var out struct {
		Released bool `json:"released"`
	}
	err := l.c.call(ctx, http.MethodDelete, l.Name, "", map[string]any{"token": l.Token}, &out)
	if err != nil {
		if errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNotOwner) {
			l.end(fmt.Errorf("lease %s: %w", l.Name, ErrLost))
		}
		return fmt.Errorf("release %s: %w", l.Name, err)
	}
	l.end(ErrReleased)
	return nil
}

func (c *Client) call(ctx context.Context, method, name, suffix string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/v1/locks/"+url.PathEscape(name)+suffix, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var env struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(data, &env)
		return &APIError{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message}
	}
	return json.Unmarshal(data, out)
}
