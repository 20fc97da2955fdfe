package locks_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// closedConn is a Conn that never connects (the module must not need Redis
// to be built).
func closedConn(t *testing.T) *redisstore.Conn {
	t.Helper()
	port, err := redisstoretest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := redisstore.Options{URL: "redis://127.0.0.1:" + strconv.Itoa(port), Port: 6379, SSLCertReqs: "required"}
	conn, err := redisstore.Open(opts, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func TestRedisOutageIs503(t *testing.T) {
	s := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	g := acquire(t, h.API, "o", `{"ttl_ms":60000}`)
	s.Kill()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/locks/o2", `{}`},
		{"POST", "/v1/locks/o2", `{"wait_ms":1000}`},
		{"POST", "/v1/locks/o/refresh", tokenBody(g.Token)},
		{"DELETE", "/v1/locks/o", tokenBody(g.Token)},
		{"GET", "/v1/locks/o", ""},
	} {
		if r := do(t, t.Context(), c.method, h.API+c.path, c.body); r.status != 503 || r.code() != "redis_unavailable" {
			t.Fatalf("%s %s during outage: got %d %s, want 503 redis_unavailable", c.method, c.path, r.status, r.body)
		}
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	// A fresh Redis (no persistence): the lock can be taken again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := do(t, t.Context(), "POST", h.API+"/v1/locks/o", `{}`)
		if r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acquire after Redis returned: got %d %s", r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWaitTimesOutWith409(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		acquire(t, h.API, "busy", `{"ttl_ms":60000,"owner":"holder"}`)
		start := time.Now()
		r := do(t, t.Context(), "POST", h.API+"/v1/locks/busy", `{"wait_ms":300}`)
		if r.status != 409 || r.code() != "lock_held" {
			t.Fatalf("got %d %s, want 409 lock_held", r.status, r.body)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Fatalf("answered after %s, want after the whole wait_ms (300ms)", waited)
		}
		m := h.Metrics(t)
		for _, want := range []string{
			`sidecar_lock_acquires_total{outcome="timeout"} 1`,
			`sidecar_lock_acquires_total{outcome="acquired"} 1`,
			`sidecar_lock_wait_seconds_count{outcome="timeout"} 1`,
			`sidecar_lock_waiters 0`,
		} {
			if !strings.Contains(m, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})
}

// TestWaiterIsWokenByRelease: a waiter on one sidecar is woken by a release
// through another (Pub/Sub), not by its re-check.
func TestWaiterIsWokenByRelease(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h1 := sidecartest.Start(t, s, nil, locks.Factory)
		h2 := sidecartest.Start(t, s, nil, locks.Factory)
		g := acquire(t, h1.API, "handover", `{"ttl_ms":60000}`)
		got := make(chan reply, 1)
		go func() { got <- do(t, context.Background(), "POST", h2.API+"/v1/locks/handover", `{"wait_ms":20000}`) }()
		waitMetric(t, h2, `sidecar_lock_waiters 1`)
		// Let the waiter settle into its re-check sleep, then release.
		time.Sleep(50 * time.Millisecond)
		if r := do(t, t.Context(), "DELETE", h1.API+"/v1/locks/handover", tokenBody(g.Token)); r.status != 200 {
			t.Fatalf("release: got %d %s", r.status, r.body)
		}
		r := <-got
		if r.status != 200 || decode[grant](t, r).FencingToken <= g.FencingToken {
			t.Fatalf("waiter: got %d %s, want 200 with a fence above %d", r.status, r.body, g.FencingToken)
		}
		waitMetric(t, h2, `sidecar_lock_waiter_wakeups_total{reason="released"} 1`)
		waitMetric(t, h2, `sidecar_lock_waiters 0`)
	})
}

func waitMetric(t *testing.T, h *sidecartest.Host, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := h.Metrics(t); strings.Contains(m, want+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed %q", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCancelledWaiterFreesEverything(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		g := acquire(t, h.API, "c", `{"ttl_ms":60000}`)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan reply, 1)
		go func() { done <- do(t, ctx, "POST", h.API+"/v1/locks/c", `{"wait_ms":20000}`) }()
		waitMetric(t, h, `sidecar_lock_waiters 1`)
		cancel()
		if r := <-done; r.status != -1 {
			t.Fatalf("cancelled request: got %d %s, want a client-side cancellation", r.status, r.body)
		}
		waitMetric(t, h, `sidecar_lock_waiters 0`)
		waitMetric(t, h, `sidecar_lock_acquires_total{outcome="canceled"} 1`)
		if r := do(t, t.Context(), "DELETE", h.API+"/v1/locks/c", tokenBody(g.Token)); r.status != 200 {
			t.Fatalf("release: got %d %s", r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond)
		if st := inspect(t, h.API, "c"); st.Held {
			t.Fatalf("the cancelled waiter took the lock after release: %+v", st)
		}
	})
}

// TestShutdownEndsAWaitWith503: when the host begins to shut down, a
// waiting acquire is answered 503 shutting_down with Retry-After at once
// (its 5 s wait is shorter than the drain: a wait that went on would end
// 409 lock_held), and took nothing: the holder keeps the lock, its owner
// and its fence.
func TestShutdownEndsAWaitWith503(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		rc := s.Client(t)
		g := acquire(t, h.API, "sd", `{"ttl_ms":60000,"owner":"holder"}`)
		c := sidecartest.NewClient(t, h.API)
		got := make(chan sidecartest.Reply, 1)
		go func() {
			got <- c.Send(context.Background(), "POST", "/v1/locks/sd", `{"wait_ms":5000,"owner":"waiter"}`)
		}()
		waitMetric(t, h, `sidecar_lock_waiters 1`)
		if err := h.Stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		r := <-got
		if r.Err != nil || r.Status != 503 || r.Code() != "shutting_down" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("waiter at shutdown: %s %v, want 503 shutting_down with Retry-After", r, r.Header)
		}
		k := locks.KeysOf("sd")
		if v, err := get(t, rc, k.Lock); err != nil || v != g.Token {
			t.Errorf("lock after shutdown: %q %v, want the holder's token", v, err)
		}
		owner, err := rc.Do(t.Context(), rc.B().Hget().Key(k.Meta).Field("owner").Build()).ToString()
		if err != nil || owner != "holder" {
			t.Errorf("owner after shutdown: %q %v, want holder", owner, err)
		}
		if fence, err := get(t, rc, k.Fence); err != nil || fence != strconv.FormatInt(g.FencingToken, 10) {
			t.Errorf("fence after shutdown: %q %v, want %d (no grant since)", fence, err, g.FencingToken)
		}
		rec := httptest.NewRecorder()
		h.Host.OpsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, want := range []string{`sidecar_lock_acquires_total{outcome="shutdown"} 1`, `sidecar_lock_waiters 0`} {
			if !strings.Contains(rec.Body.String(), want+"\n") {
				t.Errorf("metrics after shutdown lack %q", want)
			}
		}
	})
}
