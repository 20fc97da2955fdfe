package locks

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Outcomes of an acquire: the values of the outcome label.
const (
	outcomeAcquired = "acquired" // granted (at once or after waiting)
	outcomeConflict = "conflict" // held, and the caller asked not to wait
	outcomeTimeout  = "timeout"  // held for the whole of wait_ms
	outcomeCanceled = "canceled" // the caller hung up while waiting
	outcomeError    = "error"    // Redis failed
	outcomeShutdown = "shutdown" // the sidecar began to shut down (503 shutting_down)
)

var acquireOutcomes = []string{outcomeAcquired, outcomeConflict, outcomeTimeout, outcomeCanceled, outcomeError, outcomeShutdown}

// metrics are the module's Prometheus series. No lock name, owner or token is
// ever a label.
type metrics struct {
	acquires        *prometheus.CounterVec
	wait            *prometheus.HistogramVec
	refreshFailures *prometheus.CounterVec
	releases        *prometheus.CounterVec
	wakeups         *prometheus.CounterVec
	waiting         prometheus.Gauge
	held            *heldSet
	heldGauge       prometheus.GaugeFunc
}

func newMetrics() *metrics {
	m := &metrics{
		acquires: sidecar.NewCounterVec("sidecar_lock_acquires_total", "Lock acquire requests by outcome (acquired, conflict, timeout, canceled, error, shutdown).", "outcome"),
		wait: sidecar.NewHistogramVec("sidecar_lock_wait_seconds", "Time an acquire request spent before it was granted or gave up, by outcome.",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}, "outcome"),
		refreshFailures: sidecar.NewCounterVec("sidecar_lock_refresh_failures_total", "Lock refreshes that failed: lost (the token no longer holds the lock) or error (Redis failed).", "reason"),
		releases:        sidecar.NewCounterVec("sidecar_lock_releases_total", "Lock release requests by outcome (released, not_held, not_owner, error).", "outcome"),
		wakeups:         sidecar.NewCounterVec("sidecar_lock_waiter_wakeups_total", "Times a blocked waiter tried again: released (Pub/Sub release message) or recheck (TTL-based safety net).", "reason"),
		waiting:         sidecar.NewGauge("sidecar_lock_waiters", "Acquire requests currently blocked waiting for a lock on this sidecar."),
		held:            newHeldSet(),
	}
	m.heldGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sidecar_lock_held",
		Help: "Locks granted through this sidecar that were neither released through it nor past their TTL.",
	}, func() float64 { return float64(m.held.count()) })
	for _, o := range acquireOutcomes {
		m.acquires.WithLabelValues(o)
		m.wait.WithLabelValues(o)
	}
	for _, r := range []string{"lost", "error"} {
		m.refreshFailures.WithLabelValues(r)
	}
	for _, o := range []string{"released", "not_held", "not_owner", "error"} {
		m.releases.WithLabelValues(o)
	}
	for _, r := range []string{"released", "recheck"} {
		m.wakeups.WithLabelValues(r)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.acquires, m.wait, m.refreshFailures, m.releases, m.wakeups, m.waiting, m.heldGauge}
}

func (m *metrics) acquired(outcome string, waited time.Duration) {
	m.acquires.WithLabelValues(outcome).Inc()
	m.wait.WithLabelValues(outcome).Observe(waited.Seconds())
}

// heldSet tracks the leases this sidecar granted, with their local deadline
// on the monotonic clock (only for the gauge: expiry itself is Redis's).
type heldSet struct {
	mu    sync.Mutex
	until map[heldKey]time.Time
	prune int // prune expired entries when the set grows past this
}

type heldKey struct{ name, token string }

func newHeldSet() *heldSet { return &heldSet{until: map[heldKey]time.Time{}, prune: 64} }

func (h *heldSet) add(name, token string, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until[heldKey{name, token}] = time.Now().Add(ttl)
	if len(h.until) > h.prune {
		h.dropExpired()
		h.prune = max(64, 2*len(h.until))
	}
}

// refreshed moves the deadline of a lease granted here; leases granted
// elsewhere (another sidecar, redis-py) are not counted.
func (h *heldSet) refreshed(name, token string, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.until[heldKey{name, token}]; ok {
		h.until[heldKey{name, token}] = time.Now().Add(ttl)
	}
}

func (h *heldSet) remove(name, token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.until, heldKey{name, token})
}

func (h *heldSet) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropExpired()
	return len(h.until)
}

func (h *heldSet) dropExpired() {
	now := time.Now()
	for k, t := range h.until {
		if !now.Before(t) {
			delete(h.until, k)
		}
	}
}
