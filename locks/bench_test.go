package locks_test

import (
	"context"
	"slices"
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
