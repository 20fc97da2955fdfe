package client_test

// The lease's behaviour is tested in the client package, where it lives
// now; this file checks that the deprecated names still work.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/locks/client"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// sidecarURL is the API of the sidecar TestMain runs for the example and
// tests, on a fresh Redis (a real redis-server when installed).
var sidecarURL string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	stop, err := redisstoretest.Setup(func(tb testing.TB) {
		sidecarURL = sidecartest.Start(tb, redisstoretest.New(tb), nil, locks.Factory).API
	})
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start sidecar:", err)
		return 1
	}
	return m.Run()
}

// Code written against this package keeps working: it now runs
// github.com/agentsidecar/agentsidecar/client.
func Example() {
	ctx := context.Background()
	c := client.New(sidecarURL) // "http://127.0.0.1:7480" in a pod

	lease, err := c.Acquire(ctx, "example-graph-writes", client.Options{Owner: "worker-1", TTL: 10 * time.Second})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("worker-1 holds the lock, fencing token", lease.Fence > 0)

	_, err = c.Acquire(ctx, "example-graph-writes", client.Options{Owner: "worker-2", Wait: 100 * time.Millisecond})
	fmt.Println("worker-2:", errors.Is(err, client.ErrHeld))

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	fmt.Println("released:", errors.Is(lease.Err(), client.ErrReleased))
	// Output:
	// worker-1 holds the lock, fencing token true
	// worker-2: true
	// released: true
}

func TestDeprecatedNames(t *testing.T) {
	c := client.New(sidecarURL, client.WithBearerToken(""), client.WithHTTPClient(nil))
	_, err := c.Acquire(t.Context(), "bad:name", client.Options{})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "invalid_id" {
		t.Fatalf("got %v, want a 400 invalid_id APIError", err)
	}
	lease, err := c.Acquire(t.Context(), "deprecated", client.Options{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var l *client.Lease = lease
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(t.Context()); !errors.Is(err, client.ErrReleased) {
		t.Fatalf("second Release: %v", err)
	}
	for _, e := range []error{client.ErrLost, client.ErrNotHeld, client.ErrNotOwner} {
		if e == nil {
			t.Fatal("nil sentinel")
		}
	}
}
