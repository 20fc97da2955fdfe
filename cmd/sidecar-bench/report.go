package main

import (
	"fmt"
	"io"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The percentiles printed, and their column titles.
var (
	quantiles = []float64{50, 90, 99, 99.9}
	qNames    = []string{"p50", "p90", "p99", "p99.9"}
)

func ms(ns int64) string { return fmt.Sprintf("%.3fms", float64(ns)/1e6) }

func printPhase(w io.Writer, r *phaseResult) {
	fmt.Fprintf(w, "\nphase %s: %.2f s, %d requests, %.0f req/s, %d errors\n", r.name, r.elapsed.Seconds(), r.total(), r.rate(-1), r.errors())
	if r.firstErr != nil {
		fmt.Fprintf(w, "  first error: %v\n", r.firstErr)
	}
	fmt.Fprintf(w, "  %-13s %9s %9s %7s", "op", "count", "req/s", "errors")
	for _, q := range qNames {
		fmt.Fprintf(w, " %10s", q)
	}
	fmt.Fprintf(w, " %10s\n", "max")
	row := func(name string, h *hdrhistogram.Histogram, rate float64, errs int64) {
		fmt.Fprintf(w, "  %-13s %9d %9.0f %7d", name, h.TotalCount(), rate, errs)
		for _, q := range quantiles {
			fmt.Fprintf(w, " %10s", ms(h.ValueAtQuantile(q)))
		}
		fmt.Fprintf(w, " %10s\n", ms(h.Max()))
	}
	for k := range numKinds {
		if r.count(k) > 0 || r.errs[k] > 0 {
			row(kindNames[k], r.hist[k], r.rate(k), r.errs[k])
		}
	}
	row("all", r.all, r.rate(-1), r.errors())
	if r.open {
		fmt.Fprintf(w, "  open loop: %d requests found every connection busy at their due time (latency counted from it); timer lag of the others (not counted): p50 %s, p99 %s\n",
			r.behind, ms(r.lag.ValueAtQuantile(50)), ms(r.lag.ValueAtQuantile(99)))
	}
	if len(r.cpu) > 0 && r.total() > 0 {
		fmt.Fprintf(w, "  CPU per request:")
		for _, n := range []string{"sidecar", "redis", "bench"} {
			if d, ok := r.cpu[n]; ok {
				fmt.Fprintf(w, " %s %.1fµs", n, float64(d.Nanoseconds())/1e3/float64(r.total()))
			}
		}
		fmt.Fprintln(w)
	}
}

// printComparison prints sidecar/direct throughput and, per operation, the
// latency the sidecar adds at each percentile (sidecar minus direct).
func printComparison(w io.Writer, direct, side *phaseResult) {
	if direct == nil || side == nil {
		return
	}
	fmt.Fprintf(w, "\nsidecar/direct throughput: %.3f (%.0f / %.0f req/s)\n", side.rate(-1)/direct.rate(-1), side.rate(-1), direct.rate(-1))
	fmt.Fprintf(w, "sidecar adds (sidecar - direct latency):\n  %-13s", "op")
	for _, q := range qNames {
		fmt.Fprintf(w, " %10s", q)
	}
	fmt.Fprintln(w)
	row := func(name string, s, d *hdrhistogram.Histogram) {
		fmt.Fprintf(w, "  %-13s", name)
		for _, q := range quantiles {
			fmt.Fprintf(w, " %10s", signedMs(s.ValueAtQuantile(q)-d.ValueAtQuantile(q)))
		}
		fmt.Fprintln(w)
	}
	for k := range numKinds {
		if side.count(k) > 0 && direct.count(k) > 0 {
			row(kindNames[k], side.hist[k], direct.hist[k])
		}
	}
	row("all", side.all, direct.all)
}

func signedMs(ns int64) string { return fmt.Sprintf("%+.3fms", float64(ns)/1e6) }

// The load tool's targets (BENCHMARKS.md, "Load tool").
const (
	targetAddedP99   = 500 * time.Microsecond
	targetAppendPush = 0.30
	targetRSS        = 40 << 20
	targetStartup    = 100 * time.Millisecond
)

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// printSpawned prints the sidecar's memory and start-up times (when the tool
// started it) and the targets this run measured.
func (e *env) printSpawned(w io.Writer, cfg *config, direct, side *phaseResult, rpush float64) error {
	var hwm int64
	if e.sidecar != nil {
		rss, peak, err := memory(e.sidecar.pid())
		if err != nil {
			return fmt.Errorf("sidecar memory: %w", err)
		}
		hwm = peak
		fmt.Fprintf(w, "\nsidecar RSS: idle %.1f MB, now %.1f MB, peak (VmHWM) %.1f MB\n", mb(e.idleRSS), mb(rss), mb(peak))
		fmt.Fprintf(w, "startup to ready: %d starts, min %s, median %s, max %s (exec to /readyz 200, Redis already up)\n",
			len(e.startups), ms(minOf(e.startups).Nanoseconds()), ms(median(e.startups).Nanoseconds()), ms(maxOf(e.startups).Nanoseconds()))
	}
	fmt.Fprintln(w, "\ntargets:")
	if direct != nil && side != nil {
		added := time.Duration(side.all.ValueAtQuantile(99) - direct.all.ValueAtQuantile(99))
		note := ""
		if cfg.rate != 1000 {
			note = " (the target is defined at -rate 1000)"
		}
		fmt.Fprintf(w, "  sidecar adds at p99 (all ops): %s, target < 0.5 ms: %s%s\n", signedMs(added.Nanoseconds()), verdict(added < targetAddedP99), note)
	}
	if rpush > 0 && side != nil && side.count(opAppend) > 0 {
		ratio := side.rate(opAppend) / rpush
		note := ""
		if cfg.rate > 0 || cfg.mix.text != "append=1" && side.count(opAppend) != side.total() {
			note = " (peak appends: use -mix append=1 without -rate)"
		}
		fmt.Fprintf(w, "  sidecar appends / redis-benchmark RPUSH: %.0f / %.0f = %.3fx, target >= 0.30x: %s%s\n",
			side.rate(opAppend), rpush, ratio, verdict(ratio >= targetAppendPush), note)
	}
	if e.sidecar != nil {
		if side != nil {
			fmt.Fprintf(w, "  sidecar peak RSS: %.1f MB, target < 40 MB: %s\n", mb(hwm), verdict(hwm < targetRSS))
		}
		med := median(e.startups)
		fmt.Fprintf(w, "  startup to ready (median): %s, target < 100 ms: %s\n", ms(med.Nanoseconds()), verdict(med < targetStartup))
	}
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func minOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = min(m, d)
	}
	return m
}

func maxOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
