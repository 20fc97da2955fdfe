package locks_test

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

var scriptStat = regexp.MustCompile(`cmdstat_(?:evalsha|eval|fcall|fcall_ro):calls=(\d+)`)

// scriptCalls is the number of scripts (FCALL, EVALSHA and EVAL) Redis ran since
// its last CONFIG RESETSTAT, from INFO commandstats.
func scriptCalls(t testing.TB, rc rueidis.Client) int {
	t.Helper()
	info, err := rc.Do(t.Context(), rc.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range scriptStat.FindAllStringSubmatch(info, -1) {
		c, _ := strconv.Atoi(m[1])
		n += c
	}
	return n
}

// TestBlockedWaiterCostsRedisLittle counts the scripts Redis runs while
// waiters wait 3 s on a lock held for a minute: release would wake them
// (Pub/Sub), so all they run is the first try and the safety-net re-check,
// at most every 1.5-2 s, then one last try at the end of wait_ms.
func TestBlockedWaiterCostsRedisLittle(t *testing.T) {
	const waiters = 4
	s := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	rc := s.Client(t)
	acquire(t, h.API, "slow", `{"ttl_ms":60000,"owner":"holder"}`)
	if err := rc.Do(t.Context(), rc.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			r := do(t, t.Context(), "POST", h.API+"/v1/locks/slow", `{"wait_ms":3000}`)
			if r.status != 409 || r.code() != "lock_held" || !strings.Contains(r.body, `by \"holder\"`) {
				t.Errorf("waiter: got %d %s, want 409 lock_held naming the holder", r.status, r.body)
			}
		})
	}
	wg.Wait()
	// Per waiter: the try at 0, a re-check at 1.5-2 s, the last try at 3 s.
	// Polling every 0.5 s would be about 7 per waiter.
	if n := scriptCalls(t, rc); n < waiters || n > 4*waiters {
		t.Fatalf("%d waiters ran %d scripts in 3 s, want %d-%d (no busy polling, but a safety net)", waiters, n, waiters, 4*waiters)
	}
	m := h.Metrics(t)
	if !strings.Contains(m, `sidecar_lock_acquires_total{outcome="timeout"} 4`+"\n") {
		t.Errorf("metrics lack 4 timeouts:\n%s", m)
	}
}

// TestWaiterRechecksAtTheHoldersExpiry: a holder that never releases (no
// Pub/Sub message) with 3 s left; the waiter's re-check is scheduled at that
// expiry from the PTTL the script read (capped at MaxRecheck), so the grant
// takes a few scripts: the first try, one or two capped re-checks, and the
// one just after the TTL; never the first try alone (the holder had 3 s).
func TestWaiterRechecksAtTheHoldersExpiry(t *testing.T) {
	s := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	rc := s.Client(t)
	first := acquire(t, h.API, "expiring", `{"ttl_ms":3000}`)
	if err := rc.Do(t.Context(), rc.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	g := acquire(t, h.API, "expiring", `{"wait_ms":10000}`)
	if g.FencingToken <= first.FencingToken {
		t.Fatalf("fence %d after %d, want larger", g.FencingToken, first.FencingToken)
	}
	// Polling every 0.5 s (the old schedule) would take 7 or more.
	if n := scriptCalls(t, rc); n < 2 || n > 5 {
		t.Fatalf("the waiter ran %d scripts to get a lock that expired after 3 s, want 2-5 (a try, capped re-checks, then one at the expiry)", n)
	}
}
