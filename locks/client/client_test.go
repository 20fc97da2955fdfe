package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/locks/client"
	"github.com/agentsidecar/agentsidecar/locks/internal/locktest"
)

// sidecarURL is the API of the sidecar TestMain runs for the examples and
// tests, on a fresh Redis (a real redis-server when installed).
var (
	sidecarURL string
	redisURL   string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	r, err := locktest.StartRedis()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start redis:", err)
		return 1
	}
	defer r.Stop()
	h, err := locktest.Start(r.URL, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start sidecar:", err)
		return 1
	}
	defer func() { _ = h.Stop() }()
	sidecarURL, redisURL = h.API, r.URL
	return m.Run()
}

func Example() {
	ctx := context.Background()
	c := client.New(sidecarURL) // "http://127.0.0.1:7480" in a pod

	lease, err := c.Acquire(ctx, "example-graph-writes", client.Options{Owner: "worker-1", TTL: 10 * time.Second})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("worker-1 holds the lock, fencing token", lease.Fence)

	// Another worker does not get it while the lease lives.
	_, err = c.Acquire(ctx, "example-graph-writes", client.Options{Owner: "worker-2", Wait: 100 * time.Millisecond})
	fmt.Println("worker-2:", errors.Is(err, client.ErrHeld))

	// Work under the lease: this context ends if the lease is lost.
	work, cancel := lease.Context(ctx)
	_ = work // pass work and lease.Fence to the protected resource
	cancel()

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	lease2, err := c.Acquire(ctx, "example-graph-writes", client.Options{Owner: "worker-2"})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	defer lease2.Release(ctx)
	fmt.Println("worker-2 holds it now, fencing token", lease2.Fence)
	// Output:
	// worker-1 holds the lock, fencing token 1
	// worker-2: true
	// worker-2 holds it now, fencing token 2
}

func TestLeaseRefreshesUntilRelease(t *testing.T) {
	c := client.New(sidecarURL)
	lease, err := c.Acquire(t.Context(), "refreshing", client.Options{TTL: 300 * time.Millisecond, RefreshEvery: 50 * time.Millisecond})
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
	if _, err := c.Acquire(t.Context(), "refreshing", client.Options{}); !errors.Is(err, client.ErrHeld) {
		t.Fatalf("acquire of a refreshed lease: got %v, want ErrHeld", err)
	}
	if err := lease.Release(t.Context()); err != nil {
		t.Fatal(err)
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
	lease, err := c.Acquire(t.Context(), "stolen", client.Options{TTL: 10 * time.Second, RefreshEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := lease.Context(t.Context())
	defer cancel()
	// Someone deletes the key behind the lease's back (an operator, a
	// failover that lost the write): the next refresh finds it lost.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisURL[len("redis://"):]}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
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

func TestAcquireErrors(t *testing.T) {
	c := client.New(sidecarURL)
	_, err := c.Acquire(t.Context(), "bad:name", client.Options{})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "invalid_id" {
		t.Fatalf("got %v, want a 400 invalid_id APIError", err)
	}
}
