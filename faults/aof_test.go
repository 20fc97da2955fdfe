package faults

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestAppendOnlyKillLosesNoAcknowledgedAppend appends from several
// goroutines to a redis-server running with appendonly yes and appendfsync
// always, SIGKILLs it mid-load and restarts it on the same directory and
// port. Every append acknowledged before the kill must be there afterwards;
// nothing may be there that was never sent; an append in flight at the kill
// may be there or not, but whole: every stored entry is valid JSON with the
// ten fields, and the list, the qa_id index and the record agree (checked
// in Redis and through the API).
func TestAppendOnlyKillLosesNoAcknowledgedAppend(t *testing.T) {
	srv := redisstoretest.NewReal(t, "--appendonly", "yes", "--appendfsync", "always")
	h := startHost(t, srv, nil)
	c := sidecartest.NewClient(t, h.API)

	const (
		workers  = 4
		sessions = 2
	)
	var (
		mu       sync.Mutex
		acks     = map[string]bool{} // qa_id -> acknowledged (201 or 200)
		sent     = map[string]bool{} // every qa_id ever sent
		statuses = map[int]int{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := (w + i) % sessions
				id := fmt.Sprintf("w%d-%d", w, i)
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r := c.Send(ctx, "POST", fmt.Sprintf("/v1/users/aof/sessions/s%d/entries", s),
					fmt.Sprintf(`{"qa_id":%q,"question":"question %d","answer":"answer %d","context":"ctx"}`, id, i, i))
				cancel()
				mu.Lock()
				statuses[r.Status]++
				if r.Status == http.StatusCreated || r.Status == http.StatusOK {
					acks[id] = true
				}
				mu.Unlock()
				if r.Status == http.StatusServiceUnavailable {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}

	time.Sleep(1500 * time.Millisecond)
	srv.Kill() // SIGKILL mid-load
	mu.Lock()
	ackedAtKill := len(acks)
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// A reply Redis sent (after its fsync) just before dying can reach the
	// caller after Kill returned: such appends count as acknowledged too.
	t.Logf("%d appends acknowledged while Kill was returning", len(acks)-ackedAtKill)
	if ackedAtKill < 20 {
		t.Fatalf("only %d appends acknowledged before the kill: the load did not run", ackedAtKill)
	}

	if err := srv.Start(); err != nil { // same args: same --dir, same port
		t.Fatalf("restart redis-server: %v", err)
	}
	recovery := c.WaitServing(t, "/v1/users/aof/sessions/s0/entries", 30*time.Second)
	t.Logf("%d appends sent, %d acknowledged before SIGKILL, statuses %v; serving %s after restart",
		len(sent), len(acks), statuses, recovery.Round(time.Millisecond))

	rc := srv.Client(t)
	stored := map[string]bool{}
	for s := range sessions {
		for _, e := range checkSession(t, rc, c, "aof", fmt.Sprintf("s%d", s)) {
			stored[e.QAID] = true
			if !sent[e.QAID] {
				t.Errorf("stored qa_id %s was never sent", e.QAID)
			}
		}
	}
	lost := 0
	for id := range acks {
		if !stored[id] {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged append %s is gone after the restart", id)
			}
		}
	}
	t.Logf("after restart: %d entries stored, %d acknowledged lost, %d unacknowledged (in flight at the kill) kept",
		len(stored), lost, len(stored)-(len(acks)-lost))
}
