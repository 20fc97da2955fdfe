package locks_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

func reportPercentiles(b *testing.B, name string, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) }
	b.ReportMetric(at(0.50), name+"-p50-µs")
	b.ReportMetric(at(0.99), name+"-p99-µs")
}

// BenchmarkAcquireRelease is one uncontended acquire + release round trip
// pair through the sidecar's HTTP API (Redis on loopback).
func BenchmarkAcquireRelease(b *testing.B) {
	s := redisstoretest.New(b)
	h := sidecartest.Start(b, s, nil, locks.Factory)
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		r := do(b, ctx, "POST", h.API+"/v1/locks/bench", `{"ttl_ms":10000}`)
		if r.status != 200 {
			b.Fatalf("acquire: %d %s", r.status, r.body)
		}
		g := decode[grant](b, r)
		if r := do(b, ctx, "DELETE", h.API+"/v1/locks/bench", tokenBody(g.Token)); r.status != 200 {
			b.Fatalf("release: %d %s", r.status, r.body)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, "pair", lat)
}

// BenchmarkHandover measures, under contention, the time from a holder
// starting its release to a blocked waiter (already asleep in the sidecar)
// getting its grant: release round trip + Pub/Sub wake-up + acquire.
func BenchmarkHandover(b *testing.B) {
	s := redisstoretest.New(b)
	h := sidecartest.Start(b, s, nil, locks.Factory)
	ctx := context.Background()
	waiting := func() float64 {
		mfs, _ := h.Host.Registry().Gather()
		for _, mf := range mfs {
			if mf.GetName() == "sidecar_lock_waiters" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return 0
	}
	token := decode[grant](b, do(b, ctx, "POST", h.API+"/v1/locks/handover", `{"ttl_ms":60000}`)).Token
	var lat []time.Duration
	type result struct {
		r  reply
		at time.Time
	}
	for b.Loop() {
		got := make(chan result, 1)
		go func() {
			r := do(b, ctx, "POST", h.API+"/v1/locks/handover", `{"ttl_ms":60000,"wait_ms":10000}`)
			got <- result{r, time.Now()}
		}()
		for waiting() < 1 {
			time.Sleep(50 * time.Microsecond)
		}
		start := time.Now()
		if r := do(b, ctx, "DELETE", h.API+"/v1/locks/handover", tokenBody(token)); r.status != 200 {
			b.Fatalf("release: %d %s", r.status, r.body)
		}
		res := <-got
		if res.r.status != 200 {
			b.Fatalf("waiter: %d %s", res.r.status, res.r.body)
		}
		lat = append(lat, res.at.Sub(start))
		token = decode[grant](b, res.r).Token
	}
	reportPercentiles(b, "handover", lat)
}

// BenchmarkBlockedWaiter measures what blocked waiters cost Redis: 4
// waiters each wait 5 s (wait_ms) on a lock held for a minute; the metric
// is the lock_acquire scripts Redis ran (INFO commandstats) per second per
// waiter. Run it with -benchtime 1x: one op takes 5 s.
func BenchmarkBlockedWaiter(b *testing.B) {
	const waiters, wait = 4, 5 * time.Second
	s := redisstoretest.NewReal(b)
	h := sidecartest.Start(b, s, nil, locks.Factory)
	rc := s.Client(b)
	ctx := context.Background()
	acquire(b, h.API, "blocked", `{"ttl_ms":60000}`)
	var scripts, seconds float64
	for b.Loop() {
		if err := rc.Do(ctx, rc.B().ConfigResetstat().Build()).Error(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for range waiters {
			wg.Go(func() {
				if r := do(b, ctx, "POST", h.API+"/v1/locks/blocked", `{"wait_ms":`+strconv.Itoa(int(wait.Milliseconds()))+`}`); r.status != 409 {
					b.Errorf("waiter: got %d %s, want 409", r.status, r.body)
				}
			})
		}
		wg.Wait()
		seconds += time.Since(start).Seconds() * waiters
		scripts += float64(scriptCalls(b, rc))
	}
	b.ReportMetric(scripts/seconds, "scripts/s/waiter")
}
