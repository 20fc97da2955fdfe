package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

func TestLeaseRefreshesUntilRelease(t *testing.T) {
	c := client.New(sidecarURL)
	lease, err := c.Acquire(t.Context(), "refreshing", client.LeaseOptions{TTL: 300 * time.Millisecond, RefreshEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	first := lease.ExpiresAt()
	time.Sleep(700 * time.Millisecond) // more than twice the TTL
	if err := lease.Err(); err != nil {
		t.Fatalf("lease lost while refreshing: %v", err)
	}
	if !lease.ExpiresAt().After(first) {
		t.Fatalf("ExpiresAt did not move: %s then %s", first, lease.ExpiresAt())
	}
	if _, err := c.Acquire(t.Context(), "refreshing", client.LeaseOptions{}); !errors.Is(err, client.ErrHeld) {
		t.Fatalf("acquire of a refreshed lease: got %v, want ErrHeld", err)
	}
	if err := lease.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
	if !errors.Is(lease.Err(), client.ErrReleased) {
		t.Fatalf("Err after Release: %v, want ErrReleased", lease.Err())
	}
	if err := lease.Release(t.Context()); !errors.Is(err, client.ErrReleased) {
		t.Fatalf("second Release: %v, want ErrReleased", err)
	}
}

func TestLeaseReportsLoss(t *testing.T) {
	c := client.New(sidecarURL)
	lease, err := c.Acquire(t.Context(), "stolen", client.LeaseOptions{TTL: 10 * time.Second, RefreshEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := lease.Context(t.Context())
	defer cancel()
	// Someone deletes the key behind the lease's back (an operator, a
	// failover that lost the write): the next refresh finds it lost.
	rc := redisSrv.Client(t)
	if err := rc.Do(t.Context(), rc.B().Del().Key("stolen").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lease context not cancelled after the lock was lost")
	}
	if !errors.Is(lease.Err(), client.ErrLost) || !errors.Is(context.Cause(ctx), client.ErrLost) {
		t.Fatalf("Err %v, cause %v, want ErrLost", lease.Err(), context.Cause(ctx))
	}
	if err := lease.Release(t.Context()); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("Release of a lost lease: %v, want ErrNotHeld", err)
	}
}

// A lease whose sidecar stops answering is reported lost once its TTL has
// run out, measured from the last successful call.
func TestLeaseLostWhenSidecarUnreachable(t *testing.T) {
	h := sidecartest.Start(t, redisstoretest.New(t), nil, modules.All()...)
	c := client.New(h.API)
	lease, err := c.Acquire(t.Context(), "unreachable", client.LeaseOptions{TTL: 600 * time.Millisecond, RefreshEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lease not reported lost with its sidecar gone")
	}
	if !errors.Is(lease.Err(), client.ErrLost) {
		t.Fatalf("Err %v, want ErrLost", lease.Err())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("loss reported after %s, TTL 600ms", d)
	}
}

func TestLeaseWithoutRefresh(t *testing.T) {
	c := client.New(sidecarURL)
	lease, err := c.Acquire(t.Context(), "no-refresh", client.LeaseOptions{TTL: 200 * time.Millisecond, RefreshEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if info, err := c.InspectLock(t.Context(), "no-refresh"); err != nil || info.Held {
		t.Fatalf("InspectLock after the TTL: %+v, %v; want not held", info, err)
	}
	if err := lease.Release(t.Context()); !errors.Is(err, client.ErrNotHeld) || !errors.Is(lease.Err(), client.ErrLost) {
		t.Fatalf("Release: %v, Err %v; want ErrNotHeld and ErrLost", err, lease.Err())
	}
}

func TestAcquireErrors(t *testing.T) {
	c := client.New(sidecarURL)
	_, err := c.Acquire(t.Context(), "bad:name", client.LeaseOptions{})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "invalid_id" {
		t.Fatalf("got %v, want a 400 invalid_id Error", err)
	}
}
