package sidecar

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Version is stamped at build time:
//
//	go build -ldflags "-X github.com/agentsidecar/agentsidecar/sidecar.Version=v1.2.3" ./cmd/sidecar
//
// Unstamped builds report the module version, or "dev".
var Version = ""

// BuildVersion returns the stamped version and the VCS revision, if known.
func BuildVersion() (version, revision string) {
	version, revision = Version, "unknown"
	info, ok := debug.ReadBuildInfo()
	if ok {
		if version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	return version, revision
}

// NewRegistry returns a fresh (non-global) registry with the Go runtime and
// process collectors and sidecar_build_info.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	version, revision := BuildVersion()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sidecar_build_info",
		Help: "Always 1; labels carry the sidecar's version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "goversion": runtime.Version(),
		},
	})
	buildInfo.Set(1)
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo,
	)
	reg.MustRegister(lua.Collectors()...)
	for _, r := range redisstore.RedisRefusals {
		refusals.WithLabelValues(r.Code)
	}
	// every series at zero from start (docs/metrics.md, cardinality rules)
	for _, reason := range []string{"inflight", "memory", "bytes"} {
		overloaded.WithLabelValues(reason)
	}
	for _, state := range []string{"idle", "slow_upload"} {
		connectionsShed.WithLabelValues(state)
	}
	reg.MustRegister(refusals, overloaded, connectionsShed)
	return reg
}

// httpMetrics are the API's request counters and latency histogram, labelled
// by route pattern (never by raw path, which would carry user and session
// ids) and status code.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	// Series resolved once: a request costs no label hashing.
	mu        sync.RWMutex
	observers map[string]prometheus.Observer // by route
	counters  map[routeCode]prometheus.Counter
}

type routeCode struct {
	route string
	code  int
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: NewCounterVec("sidecar_http_requests_total", "API requests by route pattern and HTTP status code.", "route", "code"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sidecar_http_request_duration_seconds",
			Help: "API request latency by route pattern.",
			// Nine buckets, few on purpose: one series per
			// bucket and route makes this most of /metrics. Sub-millisecond
			// to the 10 s request deadline, with 0.5 s (the latency alert's
			// threshold) an edge.
			Buckets: []float64{.0005, .001, .0025, .005, .025, .1, .5, 2.5, 10},
		}, []string{"route"}),
	}
	m.observers = map[string]prometheus.Observer{}
	m.counters = map[routeCode]prometheus.Counter{}
	reg.MustRegister(m.requests, m.duration)
	m.known("unmatched")
	return m
}

// known creates a route's latency series at zero, so dashboards see it from
// the start. Routes are registered before serving starts.
func (m *httpMetrics) known(route string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observers[route] = m.duration.WithLabelValues(route)
}

func (m *httpMetrics) observe(route string, code int, d time.Duration) {
	key := routeCode{route, code}
	m.mu.RLock()
	obs, c := m.observers[route], m.counters[key]
	m.mu.RUnlock()
	if obs == nil {
		obs = m.duration.WithLabelValues(route)
	}
	if c == nil {
		c = m.requests.WithLabelValues(route, strconv.Itoa(code))
		m.mu.Lock()
		m.counters[key] = c // bounded: routes × status codes
		m.mu.Unlock()
	}
	c.Inc()
	obs.Observe(d.Seconds())
}

// refusals counts the calls Redis refused, by the API code they answered
// (redis_oom, redis_readonly, ...): per process, sum across pods.
var refusals = NewCounterVec("sidecar_redis_refusals_total", "API calls that Redis refused (out of memory, read-only replica, loading, busy, cluster down, ...), by the code they answered.", "code")

// overloaded counts requests shed with 503 overloaded, by what was at its
// limit (inflight, memory, bytes).
var overloaded = NewCounterVec("sidecar_http_overloaded_total", "API requests answered 503 overloaded because in-flight requests, memory or the in-flight byte budget were at their limit, by reason: inflight, memory, bytes.", "reason")

// connectionsShed counts API connections shed at the connection cap to make
// room for a new client, by what they were doing: idle (closed), or
// slow_upload (a body still arriving, answered 408).
var connectionsShed = NewCounterVec("sidecar_http_connections_shed_total", "API connections shed at the connection cap (SIDECAR_MAX_CONNECTIONS) for a new client, by state: idle, slow_upload.", "state")
