package main

import (
	"context"
	"testing"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// The load tool's mix as Go benchmarks, for CPU profiles of the sidecar's
// side (the host runs in the benchmark process, against a real
// redis-server): b.N requests from 16 connections, closed loop.
//
//	go test -run '^$' -bench Mix -benchtime 3s -timeout 120s \
//	  -cpuprofile /tmp/mix.cpu -o /tmp/bench.test ./cmd/sidecar-bench/
//	go tool pprof -top -cum -focus='net/http.\(\*conn\).serve$' /tmp/bench.test /tmp/mix.cpu
func BenchmarkMixHTTP(b *testing.B)   { benchMix(b, "sidecar", defaultMix) }
func BenchmarkMixDirect(b *testing.B) { benchMix(b, "direct", defaultMix) }

// BenchmarkAppendHTTP is appends only (the peak-append target).
func BenchmarkAppendHTTP(b *testing.B) { benchMix(b, "sidecar", "append=1") }

const defaultMix = "append=40,read=30,feedback=10,usage=10,lock=10"

func benchMix(b *testing.B, phase, mixText string) {
	srv := redisstoretest.New(b)
	h := sidecartest.Start(b, srv, nil, modules.All()...)
	m, err := parseMix(mixText)
	if err != nil {
		b.Fatal(err)
	}
	const conns, seeds, lastN = 16, 20, 10
	dt, err := newDirectTarget(h.Conn, sessionstore.Config{TTLSeconds: 604800, AbandonAfterSeconds: 1800}, seeds, lastN)
	if err != nil {
		b.Fatal(err)
	}
	var tgt target = dt
	if phase == "sidecar" {
		ht, err := newHTTPTarget(h.API, "", "raw", conns, seeds, lastN)
		if err != nil {
			b.Fatal(err)
		}
		defer ht.close()
		tgt = ht
	}
	ctx := context.Background()
	workers := make([]*worker, conns)
	for i := range workers {
		workers[i] = newWorker(randomID(), phase, i, 1)
		if err := seedSession(ctx, dt, workers[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	res := runLoad(ctx, loadSpec{name: phase, mix: m, requests: int64(b.N)}, tgt, workers)
	b.StopTimer()
	if res.errors() > 0 {
		b.Fatalf("%d errors, first: %v", res.errors(), res.firstErr)
	}
	b.ReportMetric(res.rate(-1), "req/s")
	b.ReportMetric(float64(res.all.ValueAtQuantile(50))/1e3, "p50-µs")
	b.ReportMetric(float64(res.all.ValueAtQuantile(99))/1e3, "p99-µs")
}
