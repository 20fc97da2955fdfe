package faults

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// outcome is one request of a load worker.
type outcome struct {
	worker     int
	op         string
	sent, done time.Time
	r          sidecartest.Reply
	ok         bool   // the status is one this op may answer at this point
	note       string // why not
}

// TestRedisKilledUnderLoad kills redis-server (SIGKILL) under a mixed load
// of appends, feedback, usage and lock calls through a real host, restarts
// it on the same port, and checks: while Redis is down every call fails
// fast with 503 (far below the request deadline), never 500; once Redis
// answers again the sidecar serves within a bound (logged); every call sent
// after that succeeds; and once the host stops, no goroutine is left.
func TestRedisKilledUnderLoad(t *testing.T) {
	leaksBefore := goleak.IgnoreCurrent()
	srv := redisstoretest.NewReal(t)
	const deadline = 3 * time.Second
	h := startHost(t, srv, envconf.Env{"SIDECAR_REQUEST_TIMEOUT": deadline.String()})
	c := sidecartest.NewClient(t, h.API)
	ops := sidecartest.NewClient(t, h.Ops)

	// epoch moves once Redis is killed: what was acknowledged in an earlier
	// epoch may be gone (the restarted Redis is empty: no persistence), and
	// anything acknowledged later was written to the restarted one.
	var epoch atomic.Int64
	stop := make(chan struct{})
	var mu sync.Mutex
	var results []outcome
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			out := loadWorker(w, c, &epoch, stop)
			mu.Lock()
			results = append(results, out...)
			mu.Unlock()
		})
	}

	time.Sleep(time.Second)
	tKill := time.Now()
	srv.Kill()
	epoch.Add(1)
	time.Sleep(500 * time.Millisecond)
	if r := ops.Send(context.Background(), "GET", "/readyz", ""); r.Status != http.StatusServiceUnavailable {
		t.Errorf("/readyz while Redis is down: %s", r)
	}
	time.Sleep(time.Second)
	if err := srv.Start(); err != nil {
		t.Fatalf("restart redis-server: %v", err)
	}
	tUp := time.Now() // redis-server answers PING from here
	recovery := c.WaitServing(t, "/v1/users/probe/sessions/probe/entries", 30*time.Second)
	tRecovered := tUp.Add(recovery)
	readyIn := ops.WaitServing(t, "/readyz", 30*time.Second) + recovery
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Judge every request by when it ran.
	const settle = time.Second // calls already on the old connections when Redis came back
	var down, up latencies
	firstOK := map[string]time.Duration{}
	counts := map[int]int{}
	for _, o := range results {
		counts[o.r.Status]++
		switch {
		case o.r.Err != nil:
			t.Errorf("worker %d %s: transport error: %v", o.worker, o.op, o.r.Err)
		case o.r.Status == http.StatusInternalServerError:
			t.Errorf("worker %d %s: 500 (a panic or an unmapped error): %s", o.worker, o.op, o.r)
		case o.r.Status == http.StatusServiceUnavailable:
			down = append(down, o.r.Took)
			if o.done.Before(tKill) {
				t.Errorf("worker %d %s: 503 before Redis was killed: %s", o.worker, o.op, o.r)
			}
			if o.sent.After(tRecovered.Add(settle)) {
				t.Errorf("worker %d %s: 503 %s after the sidecar had recovered: %s", o.worker, o.op, o.sent.Sub(tRecovered), o.r)
			}
			if o.r.Code() != "redis_unavailable" {
				t.Errorf("worker %d %s: 503 with code %q", o.worker, o.op, o.r.Code())
			}
		case !o.ok:
			t.Errorf("worker %d %s: %s: %s", o.worker, o.op, o.note, o.r)
		default:
			up = append(up, o.r.Took)
			if o.sent.After(tUp) {
				if d := o.done.Sub(tUp); firstOK[o.op] == 0 || d < firstOK[o.op] {
					firstOK[o.op] = d
				}
			}
		}
	}
	t.Logf("%d requests by status %v", len(results), counts)
	t.Logf("503 latency while Redis was down (request deadline %s): %s", deadline, down)
	t.Logf("success latency: %s", up)
	t.Logf("recovery after redis-server answered PING: API %s, /readyz %s; first success per op: %v",
		recovery.Round(time.Millisecond), readyIn.Round(time.Millisecond), firstOK)
	if len(down) == 0 {
		t.Error("no request saw the outage: the load did not run while Redis was down")
	}
	if m := down.max(); m > deadline/3 {
		t.Errorf("slowest 503 took %s: not failing fast (deadline %s)", m, deadline)
	}
	// The health check runs every 0.5 s and renews the connection on its
	// first success: about a second. The bound is generous for noisy CI.
	if recovery > 5*time.Second {
		t.Errorf("API served again %s after Redis returned, want well under 5s", recovery)
	}
	for _, op := range []string{"append", "feedback", "usage", "lock"} {
		if _, ok := firstOK[op]; !ok {
			t.Errorf("no %s succeeded after Redis returned", op)
		}
	}

	// Nothing may outlive the host: handlers, the lock subscription, the
	// health loop, rueidis' pools (including the client retired by renew).
	if err := h.Stop(); err != nil {
		t.Fatalf("stop host: %v", err)
	}
	h.Conn.Close()
	c.HTTP.CloseIdleConnections()
	ops.HTTP.CloseIdleConnections()
	goleak.VerifyNone(t, leaksBefore,
		// redisstoretest's watcher of the restarted redis-server process.
		goleak.IgnoreAnyFunction("github.com/agentsidecar/agentsidecar/redisstore/redisstoretest.(*Server).Start.func1"),
		goleak.IgnoreAnyFunction("os/exec.(*Cmd).Start.func2"))
}

// loadWorker loops over append, feedback on its last entry, usage, and
// acquire/release of its own lock until stop, and says for each answer
// whether it is one the op may give.
func loadWorker(w int, c *sidecartest.Client, epoch *atomic.Int64, stop <-chan struct{}) []outcome {
	base := fmt.Sprintf("/v1/users/load/sessions/w%d", w)
	lock := fmt.Sprintf("/v1/locks/load-w%d", w)
	var (
		lastEntry      string
		lastEntryEpoch int64
		token          string
		tokenEpoch     int64
		out            []outcome
	)
	for i := 0; i < 100000; i++ {
		select {
		case <-stop:
			return out
		default:
		}
		ep := epoch.Load()
		o := outcome{worker: w, sent: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		switch i % 4 {
		case 0:
			o.op = "append"
			id := fmt.Sprintf("w%d-%d", w, i)
			o.r = c.Send(ctx, "POST", base+"/entries", fmt.Sprintf(`{"qa_id":%q,"question":"q","answer":"a"}`, id))
			o.ok = o.r.Status == http.StatusCreated
			if o.ok {
				lastEntry, lastEntryEpoch = id, ep
			}
		case 1:
			o.op = "feedback"
			if lastEntry == "" {
				o.r = c.Send(ctx, "GET", base+"/entries?last_n=3", "")
				o.ok = o.r.Status == http.StatusOK
				break
			}
			o.r = c.Send(ctx, "PUT", base+"/entries/"+lastEntry+"/feedback", fmt.Sprintf(`{"feedback_score":%d}`, 1+i%5))
			// An entry acknowledged before the restart is gone after it.
			o.ok = o.r.Status == http.StatusOK || o.r.Status == http.StatusNotFound && lastEntryEpoch < ep
		case 2:
			o.op = "usage"
			o.r = c.Send(ctx, "POST", base+"/usage", `{"model":"gpt-4o","tokens_in":10,"tokens_out":5}`)
			o.ok = o.r.Status == http.StatusOK || o.r.Status == http.StatusCreated
		case 3:
			o.op = "lock"
			if token == "" {
				o.r = c.Send(ctx, "POST", lock, `{"ttl_ms":60000,"wait_ms":0}`)
				var g struct {
					Token string `json:"token"`
				}
				o.ok = o.r.Status == http.StatusOK && jsonInto(o.r.Body, &g) && g.Token != ""
				if o.ok {
					token, tokenEpoch = g.Token, ep
				}
				break
			}
			o.r = c.Send(ctx, "DELETE", lock, fmt.Sprintf(`{"token":%q}`, token))
			o.ok = o.r.Status == http.StatusOK || o.r.Status == http.StatusNotFound && tokenEpoch < ep
			if o.r.Status != http.StatusServiceUnavailable {
				token = ""
			}
		}
		cancel()
		o.done = time.Now()
		if !o.ok {
			o.note = "unexpected answer"
		}
		out = append(out, o)
		if o.r.Status == http.StatusServiceUnavailable {
			time.Sleep(20 * time.Millisecond) // a polite client backs off a little
		}
	}
	return out
}
