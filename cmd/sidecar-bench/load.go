package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, 1 µs to 60 s, 3 significant digits.
const (
	histMin = 1_000
	histMax = 60_000_000_000
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, 3) }

// record adds d to h, clamped to the histogram's range.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(int64(d), histMin), histMax))
}

// phaseResult is one phase's measurements.
type phaseResult struct {
	name     string
	elapsed  time.Duration
	hist     [numKinds]*hdrhistogram.Histogram
	all      *hdrhistogram.Histogram
	errs     [numKinds]int64
	firstErr error
	// Open loop: how late a free worker woke for its due time (the
	// generator's timer error, not charged), and how many requests found
	// every worker busy at their due time (charged from the due time).
	open   bool
	lag    *hdrhistogram.Histogram
	behind int64
	// Filled by the caller: CPU time of processes during the phase.
	cpu map[string]time.Duration
}

// merge adds o (another round of the same phase) to r.
func (r *phaseResult) merge(o *phaseResult) {
	r.elapsed += o.elapsed
	for k := range r.hist {
		r.hist[k].Merge(o.hist[k])
		r.errs[k] += o.errs[k]
	}
	r.all.Merge(o.all)
	r.lag.Merge(o.lag)
	r.behind += o.behind
	if r.firstErr == nil {
		r.firstErr = o.firstErr
	}
	for n, d := range o.cpu {
		r.cpu[n] += d
	}
}

func (r *phaseResult) count(k kind) int64 { return r.hist[k].TotalCount() }

func (r *phaseResult) total() int64 { return r.all.TotalCount() }

func (r *phaseResult) errors() int64 {
	var n int64
	for _, e := range r.errs {
		n += e
	}
	return n
}

// rate is requests per second of kind k, or of all kinds when k < 0.
func (r *phaseResult) rate(k kind) float64 {
	if r.elapsed <= 0 {
		return 0
	}
	n := r.total()
	if k >= 0 {
		n = r.count(k)
	}
	return float64(n) / r.elapsed.Seconds()
}

// loadSpec says how to drive one phase.
type loadSpec struct {
	name     string
	mix      mix
	duration time.Duration // used when requests == 0
	requests int64
	rate     float64 // > 0: open loop
	progress io.Writer
}

// newPhaseResult is an empty result of phase name.
func newPhaseResult(name string, open bool) *phaseResult {
	r := &phaseResult{name: name, all: newHist(), lag: newHist(), open: open}
	for k := range r.hist {
		r.hist[k] = newHist()
	}
	return r
}

// runLoad drives tgt with one goroutine per worker until the duration or the
// request count is reached (or ctx ends). Closed loop: each worker sends its
// next request when the previous one is answered; latency is the round
// trip. Open loop (rate > 0): request i is due at start + i/rate, taken by
// the next free worker; latency counts from the due time, so time spent
// waiting for a free worker (a stall) is charged to the requests it delayed
// and not silently omitted.
func runLoad(ctx context.Context, spec loadSpec, tgt target, workers []*worker) *phaseResult {
	res := newPhaseResult(spec.name, spec.rate > 0)
	l := &loadRun{spec: spec, tgt: tgt, start: time.Now()}
	l.end = l.start.Add(spec.duration)
	if spec.rate > 0 {
		l.interval = time.Duration(float64(time.Second) / spec.rate)
	}
	stopProgress := l.showProgress()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := l.work(ctx, w)
			mu.Lock()
			defer mu.Unlock()
			res.merge(r)
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(l.start)
	stopProgress()
	return res
}

// loadRun is one phase being driven: its spec and clock, and the requests
// taken (next) and answered (done) by every worker.
type loadRun struct {
	spec       loadSpec
	tgt        target
	start, end time.Time
	interval   time.Duration // open loop: between due times; 0 closed loop
	next, done atomic.Int64
}

// showProgress reports the phase's progress until the returned stop.
func (l *loadRun) showProgress() (stop func()) {
	if l.spec.progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		progress(l.spec, l.start, &l.done, quit)
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}

// work is one worker's requests, until the phase is over or ctx ends: its
// own measurements, merged by the caller.
func (l *loadRun) work(ctx context.Context, w *worker) *phaseResult {
	r := newPhaseResult(l.spec.name, l.interval > 0)
	for ctx.Err() == nil {
		from, ok := l.due(ctx, r, l.next.Add(1)-1)
		if !ok {
			break
		}
		k := l.spec.mix.pick(w)
		err := l.tgt.do(ctx, w, k)
		d := time.Since(from)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.errs[k]++
			if r.firstErr == nil {
				r.firstErr = fmt.Errorf("%s: %w", kindNames[k], err)
			}
		} else {
			record(r.hist[k], d)
			record(r.all, d)
		}
		l.done.Add(1)
	}
	return r
}

// due is when request n's latency counts from, after a free worker waited
// for its due time (open loop); false when the phase is over.
func (l *loadRun) due(ctx context.Context, r *phaseResult, n int64) (time.Time, bool) {
	if l.spec.requests > 0 && n >= l.spec.requests {
		return time.Time{}, false
	}
	if l.interval == 0 {
		from := time.Now()
		return from, l.spec.requests > 0 || from.Before(l.end)
	}
	due := l.start.Add(time.Duration(n) * l.interval)
	if l.spec.requests == 0 && !due.Before(l.end) {
		return time.Time{}, false
	}
	if now := time.Now(); now.Before(due) {
		// A free worker waits for the due time. Go's timer wakes it up
		// to ~1 ms late: the generator's own error, recorded as lag, not
		// charged.
		sleep(ctx, due.Sub(now))
		from := time.Now()
		record(r.lag, from.Sub(due))
		return from, true
	}
	// Every worker was busy past the due time: the wait is the system's
	// doing and is charged.
	r.behind++
	return due, true
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// progress writes a line a second: elapsed, requests, rate of the last second.
func progress(spec loadSpec, start time.Time, done *atomic.Int64, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			n := done.Load()
			fmt.Fprintf(spec.progress, "[%s] %4.0fs  %9d requests  %8.0f req/s\n", spec.name, now.Sub(start).Seconds(), n, float64(n-last))
			last = n
		}
	}
}
