package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "metrics", New: New}

// ScrapeTimeout bounds the Redis reads of one scrape (well under
// Prometheus's usual 10 s scrape timeout; a loaded Redis still answers).
const ScrapeTimeout = 2 * time.Second

// Module exports the Redis-derived gauges.
type Module struct {
	store        *sessionstore.Store
	abandonAfter time.Duration
	logger       *slog.Logger

	sessions, up, duration *prometheus.Desc
	tokens, cost, calls    *prometheus.Desc
	llmErrors              *prometheus.Desc
}

// New builds the module over the host's shared session store (it reads
// SESSION_ABANDON_AFTER_SECONDS from the shared settings).
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, err := sessionstore.FromDeps(deps)
	if err != nil {
		return nil, err
	}
	return &Module{
		store:        s,
		abandonAfter: s.Config().AbandonAfter(),
		logger:       deps.Logger,
		sessions: prometheus.NewDesc("sidecar_sessions",
			"Sessions in Redis by status now (running, abandoned, completed, failed), read at scrape time. Global: the same in every pod, aggregate with max.",
			[]string{"status"}, nil),
		up: prometheus.NewDesc("sidecar_sessions_scrape_up",
			"1 when the scrape-time read of session counts from Redis succeeded, else 0 (and sidecar_sessions is absent).", nil, nil),
		duration: prometheus.NewDesc("sidecar_sessions_scrape_duration_seconds",
			"Time the scrape-time Redis read took.", nil, nil),
		tokens: prometheus.NewDesc("sidecar_usage_tokens",
			"All-time tokens recorded in Redis across pods, by token_type. Global: aggregate with max.", []string{"token_type"}, nil),
		cost: prometheus.NewDesc("sidecar_usage_cost_usd",
			"All-time cost in US dollars recorded in Redis across pods. Global: aggregate with max.", nil, nil),
		calls: prometheus.NewDesc("sidecar_usage_calls",
			"All-time LLM calls recorded in Redis across pods. Global: aggregate with max.", nil, nil),
		llmErrors: prometheus.NewDesc("sidecar_usage_errors",
			"All-time LLM calls recorded with error: true in Redis across pods. Global: aggregate with max.", nil, nil),
	}, nil
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "metrics" }

// Routes implements sidecar.Module: the module serves no API route.
func (m *Module) Routes() []sidecar.Route { return nil }

// Collectors implements sidecar.Collector.
func (m *Module) Collectors() []prometheus.Collector { return []prometheus.Collector{m} }

// Describe implements prometheus.Collector.
func (m *Module) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.sessions, m.up, m.duration, m.tokens, m.cost, m.calls, m.llmErrors} {
		ch <- d
	}
}

// Collect reads the counts from Redis with a short timeout; a failed read
// reports up 0 instead of stale or made-up values.
func (m *Module) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	start := time.Now()
	st, err := m.store.Stats(ctx, m.abandonAfter)
	ch <- prometheus.MustNewConstMetric(m.duration, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil {
		m.logger.Warn("scrape-time session counts unavailable", "err", err)
		ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, 1)
	for status, n := range map[string]int64{
		sessionstore.StatusRunning: st.Running, sessionstore.StatusAbandoned: st.Abandoned,
		sessionstore.StatusCompleted: st.Completed, sessionstore.StatusFailed: st.Failed,
	} {
		ch <- prometheus.MustNewConstMetric(m.sessions, prometheus.GaugeValue, float64(n), status)
	}
	ch <- prometheus.MustNewConstMetric(m.tokens, prometheus.GaugeValue, float64(st.TokensIn), "input")
	ch <- prometheus.MustNewConstMetric(m.tokens, prometheus.GaugeValue, float64(st.TokensOut), "output")
	ch <- prometheus.MustNewConstMetric(m.cost, prometheus.GaugeValue, sessionstore.USD(st.CostNanoUSD))
	ch <- prometheus.MustNewConstMetric(m.calls, prometheus.GaugeValue, float64(st.Calls))
	ch <- prometheus.MustNewConstMetric(m.llmErrors, prometheus.GaugeValue, float64(st.Errors))
}

var (
	_ sidecar.Module       = (*Module)(nil)
	_ sidecar.Collector    = (*Module)(nil)
	_ prometheus.Collector = (*Module)(nil)
)
