package client

import (
	"context"
	"net/http"
)

// Locks (module locks). Acquire (lease.go) wraps these calls in a Lease
// that refreshes itself; use them directly to manage a token yourself.

// AcquireLock takes the lock name, waiting up to req.WaitMs (acquireLock).
// A lock held for the whole wait is an error matching ErrHeld (409).
func (c *Client) AcquireLock(ctx context.Context, name string, req AcquireLockRequest) (*LockGrant, error) {
	p, err := apiPath("locks", name)
	return answer[LockGrant](ctx, c, http.MethodPost, p, req, err)
}

// RefreshLock renews a lock held with req.Token (refreshLock). A token that
// no longer holds it is an error matching ErrLost (409).
func (c *Client) RefreshLock(ctx context.Context, name string, req RefreshLockRequest) (*LockGrant, error) {
	p, err := apiPath("locks", name, "refresh")
	return answer[LockGrant](ctx, c, http.MethodPost, p, req, err)
}

// ReleaseLock frees a lock held with token (releaseLock). Nobody holding it
// is an error matching ErrNotHeld (404); another token holding it, one
// matching ErrNotOwner (409), and that lock is left untouched.
func (c *Client) ReleaseLock(ctx context.Context, name, token string) error {
	p, err := apiPath("locks", name)
	_, err = answer[lockReleased](ctx, c, http.MethodDelete, p, releaseLockRequest{Token: token}, err)
	return err
}

// InspectLock reports whether name is held, and by whom (inspectLock).
func (c *Client) InspectLock(ctx context.Context, name string) (*LockInfo, error) {
	p, err := apiPath("locks", name)
	return answer[LockInfo](ctx, c, http.MethodGet, p, nil, err)
}
