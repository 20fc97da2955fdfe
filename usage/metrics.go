package usage

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/pricing"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// labeler turns a model name into a bounded `model` label value: the price
// table's family or "other", never the raw name. The families known in
// advance (the built-in ones and those of METRICS_MODEL_LABELS) have their
// series at zero from start; up to limit other priced families (a price
// file's) become labels on first use; any later one counts as "other". A
// full LiteLLM file (thousands of families) therefore adds at most limit
// series per metric.
type labeler struct {
	prices *pricing.Table
	known  []string // label values created at start, "other" last

	mu    sync.Mutex
	seen  map[string]bool // known and admitted families
	extra int             // families admitted on first use
	limit int
}

// newLabeler checks the operator's names: each must be priced by the
// table, and labels as its family.
func newLabeler(prices *pricing.Table, names []string, limit int) (*labeler, error) {
	l := &labeler{prices: prices, seen: map[string]bool{}, limit: limit}
	for _, f := range prices.Families() {
		l.seen[f] = true
		l.known = append(l.known, f)
	}
	for _, name := range names {
		family, _, ok := prices.Lookup(name)
		if !ok {
			return nil, envconf.Invalid("METRICS_MODEL_LABELS", "%q has no price in the built-in table or MODEL_PRICES_FILE", name)
		}
		if !l.seen[family] {
			l.seen[family] = true
			l.known = append(l.known, family)
		}
	}
	l.known = append(l.known, pricing.Other)
	return l, nil
}

// label is model's label value.
func (l *labeler) label(model string) string {
	family := l.prices.Label(model)
	if family == pricing.Other {
		return family
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[family] {
		return family
	}
	if l.extra >= l.limit {
		return pricing.Other
	}
	l.seen[family] = true
	l.extra++
	return family
}

// metrics are the module's per-process counters (a sum across pods is the
// fleet's total). The model label comes from the labeler.
type metrics struct {
	labels    *labeler
	tokens    *prometheus.CounterVec
	estimated *prometheus.CounterVec
	cost      *prometheus.CounterVec
	calls     *prometheus.CounterVec
	errors    *prometheus.CounterVec
	unpriced  prometheus.Counter
	duration  *prometheus.HistogramVec
	spend     *prometheus.HistogramVec
}

func newMetrics(labels *labeler) *metrics {
	m := &metrics{
		labels:    labels,
		tokens:    sidecar.NewCounterVec("sidecar_llm_tokens_total", "LLM tokens recorded through usage posts, by model family and token_type (input, output); estimates included.", "model", "token_type"),
		estimated: sidecar.NewCounterVec("sidecar_llm_estimated_tokens_total", "The part of sidecar_llm_tokens_total estimated as len(text) // 4 because the caller sent no count.", "model", "token_type"),
		cost:      sidecar.NewCounterVec("sidecar_llm_cost_usd_total", "LLM cost in US dollars recorded through usage posts, by model family.", "model"),
		calls:     sidecar.NewCounterVec("sidecar_llm_calls_total", "LLM calls recorded through usage posts, by model family.", "model"),
		errors:    sidecar.NewCounterVec("sidecar_llm_errors_total", "LLM calls recorded with error: true, by model family.", "model"),
		unpriced:  sidecar.NewCounter("sidecar_llm_unpriced_calls_total", "Usage posts for a model with no price and no explicit cost_usd: counted at cost 0."),
		duration: sidecar.NewHistogramVec("sidecar_session_duration_seconds", "Duration of sessions ended through this sidecar (started_at to ended_at), by status.",
			[]float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400}, "status"),
		spend: sidecar.NewHistogramVec("sidecar_session_cost_usd", "Total cost in US dollars of sessions ended through this sidecar, by status.",
			[]float64{0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 50, 100}, "status"),
	}
	for _, model := range labels.known {
		for _, tt := range []string{"input", "output"} {
			m.tokens.WithLabelValues(model, tt)
			m.estimated.WithLabelValues(model, tt)
		}
		m.cost.WithLabelValues(model)
		m.calls.WithLabelValues(model)
		m.errors.WithLabelValues(model)
	}
	for _, st := range []string{sessionstore.StatusCompleted, sessionstore.StatusFailed} {
		m.duration.WithLabelValues(st)
		m.spend.WithLabelValues(st)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.tokens, m.estimated, m.cost, m.calls, m.errors, m.unpriced, m.duration, m.spend}
}

// observe counts a call to model (the name the caller sent).
func (m *metrics) observe(name string, r usageResult, estimatedIn, estimatedOut int64) {
	model := m.labels.label(name)
	m.tokens.WithLabelValues(model, "input").Add(float64(r.TokensIn))
	m.tokens.WithLabelValues(model, "output").Add(float64(r.TokensOut))
	m.estimated.WithLabelValues(model, "input").Add(float64(estimatedIn))
	m.estimated.WithLabelValues(model, "output").Add(float64(estimatedOut))
	m.cost.WithLabelValues(model).Add(r.CostUSD)
	m.calls.WithLabelValues(model).Inc()
	if r.Error {
		m.errors.WithLabelValues(model).Inc()
	}
	if r.CostSource == "unknown_model" {
		m.unpriced.Inc()
	}
}

func (m *metrics) sessionEnded(r sessionstore.Record) {
	if r.StartedAt > 0 && r.EndedAt >= r.StartedAt {
		m.duration.WithLabelValues(r.Status).Observe(float64(r.EndedAt-r.StartedAt) / 1e6)
	}
	m.spend.WithLabelValues(r.Status).Observe(sessionstore.USD(r.CostNanoUSD))
}
