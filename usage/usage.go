package usage

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/pricing"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "usage", New: New}

// Limits.
const (
	DefaultLimit   = 50
	MaxLimit       = 500
	MaxModelLength = 256
	MaxKeyLength   = 255
	MaxTokens      = 1 << 40 // far above any call; rejects typos and overflow
	MaxCostUSD     = 1e6
)

// Config is the module's own configuration (the session settings it shares
// are sessionstore.Config).
type Config struct {
	PricesFile string `env:"MODEL_PRICES_FILE"`
	// SessionModels: distinct model names kept per session record; later
	// new names count as "other".
	SessionModels int `env:"USAGE_MAX_MODELS_PER_SESSION" envDefault:"50"`
	// DayModels: distinct model names in a day's per-model totals (per
	// bucket on Cluster); later new names count as "other".
	DayModels int `env:"USAGE_MAX_MODELS_PER_DAY" envDefault:"200"`
	// Days: UTC days of per-model totals kept, the longest window of
	// GET /v1/sessions/cost-by-model.
	Days int `env:"USAGE_BY_MODEL_DAYS" envDefault:"31"`
	// MetricModels: model names whose family gets its metric series at zero
	// from start, beside the built-in families.
	MetricModels []string `env:"METRICS_MODEL_LABELS" envSeparator:","`
	// MetricMaxModels: other priced families that may become a model label
	// on first use; later ones count as "other".
	MetricMaxModels int `env:"METRICS_MAX_MODEL_LABELS" envDefault:"50"`
}

// Validate implements envconf.Validator.
func (c Config) Validate() error {
	for _, r := range []struct {
		name      string
		v, lo, hi int
	}{
		{"USAGE_MAX_MODELS_PER_SESSION", c.SessionModels, 1, 1000},
		{"USAGE_MAX_MODELS_PER_DAY", c.DayModels, 1, 10000},
		{"USAGE_BY_MODEL_DAYS", c.Days, 1, 366},
		{"METRICS_MAX_MODEL_LABELS", c.MetricMaxModels, 0, 1000},
	} {
		if r.v < r.lo || r.v > r.hi {
			return envconf.Invalid(r.name, "must be from %d to %d, not %d", r.lo, r.hi, r.v)
		}
	}
	return nil
}

// Module serves the lifecycle, usage and listing routes.
type Module struct {
	store        *Store
	prices       *pricing.Table
	abandonAfter time.Duration
	metrics      *metrics
	logger       *slog.Logger
}

// New parses the configuration and loads the price table.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, cfg, err := sessionstore.Open[Config](deps)
	if err != nil {
		return nil, err
	}
	prices, err := pricing.Load(cfg.PricesFile)
	if err != nil {
		return nil, err
	}
	labels, err := newLabeler(prices, cfg.MetricModels, cfg.MetricMaxModels)
	if err != nil {
		return nil, err
	}
	return &Module{
		store:        &Store{Store: s, Limits: Limits{SessionModels: cfg.SessionModels, DayModels: cfg.DayModels, Days: cfg.Days}},
		prices:       prices,
		abandonAfter: s.Config().AbandonAfter(),
		metrics:      newMetrics(labels),
		logger:       deps.Logger,
	}, nil
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "usage" }

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	const session = "/v1/users/{user_id}/sessions/{session_id}"
	return []sidecar.Route{
		{Pattern: "GET " + session, Handler: m.get},
		{Pattern: "POST " + session + "/usage", Handler: m.addUsage},
		{Pattern: "POST " + session + "/complete", Handler: m.end(sessionstore.StatusCompleted)},
		{Pattern: "POST " + session + "/fail", Handler: m.end(sessionstore.StatusFailed)},
		{Pattern: "GET /v1/users/{user_id}/sessions", Handler: m.listUser, Query: []string{"status", "limit", "cursor", "metadata.*"}},
		{Pattern: "GET /v1/sessions", Handler: m.listAll, Query: []string{"status", "limit", "cursor", "metadata.*"}},
		{Pattern: "GET /v1/sessions/stats", Handler: m.stats},
		{Pattern: "GET /v1/sessions/cost-by-model", Handler: m.costByModel, Query: []string{"days"}},
	}
}

// sessionJSON is a session record as clients read it.
type sessionJSON = sessionstore.RecordJSON

func (m *Module) toJSON(st sessionstore.SessionState, withTTL bool) sessionJSON {
	return st.JSON(m.abandonAfter, withTTL)
}

func (m *Module) get(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	st, err := m.store.Get(r.Context(), user, session)
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusOK, m.toJSON(st, true))
	return nil
}

type usageRequest struct {
	Model      *string  `json:"model"`
	TokensIn   *int64   `json:"tokens_in"`
	TokensOut  *int64   `json:"tokens_out"`
	CostUSD    *float64 `json:"cost_usd"`
	InputText  *string  `json:"input_text"`
	OutputText *string  `json:"output_text"`
	Error      bool     `json:"error"`
	RequestID  *string  `json:"request_id"`
}

// usageResult is the answer to a usage post (and to its retries).
type usageResult struct {
	Model           string  `json:"model"`
	PricedAs        *string `json:"priced_as"`
	TokensIn        int64   `json:"tokens_in"`
	TokensOut       int64   `json:"tokens_out"`
	TokensEstimated bool    `json:"tokens_estimated"`
	CostUSD         float64 `json:"cost_usd"`
	CostSource      string  `json:"cost_source"` // explicit, price_table, unknown_model
	Error           bool    `json:"error"`
}

// EstimateTokens is Cognee's estimate when a provider reports no usage:
// len(text) // 4, counting characters (code points), not bytes.
func EstimateTokens(text string) int64 { return int64(utf8.RuneCountInString(text) / 4) }

func validKey(s string) bool {
	if s == "" || len(s) > MaxKeyLength {
		return false
	}
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func validModel(s string) bool {
	if strings.TrimSpace(s) == "" || len(s) > MaxModelLength || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

func (m *Module) addUsage(w http.ResponseWriter, r *http.Request) error {
	user, session, req, err := sidecar.SessionJSON[usageRequest](r)
	if err != nil {
		return err
	}
	if req.Model == nil || !validModel(*req.Model) {
		return sidecar.BadRequest("invalid_field", "field \"model\" is required: 1-%d printable characters", MaxModelLength)
	}
	key, err := idempotencyKey(r, req.RequestID)
	if err != nil {
		return err
	}
	res, est, nano, err := m.price(req)
	if err != nil {
		return err
	}
	body, err := json.Marshal(res)
	if err != nil {
		return err
	}
	st, err := m.store.AddUsage(r.Context(), user, session, Usage{
		Model: *req.Model, TokensIn: res.TokensIn, TokensOut: res.TokensOut,
		CostNanoUSD: nano, Failed: req.Error,
		IdempotencyKey: key, Result: body,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if st.Created {
		status = http.StatusCreated
		m.metrics.observe(*req.Model, res, est[0], est[1])
		if res.CostSource == "unknown_model" {
			m.logger.Debug("usage for a model with no price: cost counted as 0", "model_label", pricing.Other)
		}
	}
	sidecar.WriteBody(w, status, st.Value)
	return nil
}

// idempotencyKey is a usage post's key: the Idempotency-Key header or the
// body's request_id (the same when both are sent), "" for none.
func idempotencyKey(r *http.Request, requestID *string) (string, error) {
	key := r.Header.Get("Idempotency-Key")
	if requestID != nil {
		if key != "" && key != *requestID {
			return "", sidecar.BadRequest("invalid_field", "Idempotency-Key and request_id differ; send one")
		}
		key = *requestID
	}
	if key != "" && !validKey(key) {
		return "", sidecar.BadRequest("invalid_field", "the idempotency key must be 1-%d printable ASCII characters", MaxKeyLength)
	}
	return key, nil
}

// price is a usage post's answer: its tokens (given, else estimated from
// the texts: est, in and out) and its cost (given, else from the price
// table, else 0 for an unknown model), as the record sums it (nano USD).
func (m *Module) price(req usageRequest) (res usageResult, est [2]int64, nano int64, err error) {
	res = usageResult{Model: *req.Model, Error: req.Error}
	if res.TokensIn, est[0], err = tokens("tokens_in", req.TokensIn, req.InputText); err != nil {
		return res, est, 0, err
	}
	if res.TokensOut, est[1], err = tokens("tokens_out", req.TokensOut, req.OutputText); err != nil {
		return res, est, 0, err
	}
	res.TokensEstimated = est[0]+est[1] > 0
	family, _, priced := m.prices.Lookup(*req.Model)
	if priced {
		res.PricedAs = &family
	}
	switch {
	case req.CostUSD != nil:
		if *req.CostUSD < 0 || *req.CostUSD > MaxCostUSD {
			return res, est, 0, sidecar.BadRequest("invalid_field", "field \"cost_usd\" must be from 0 to %g", MaxCostUSD)
		}
		nano, res.CostSource = sessionstore.NanoUSD(*req.CostUSD), "explicit"
	case priced:
		// The table's cost has the explicit cost's cap: a price file's
		// price times 2^40 tokens must not become a sum no int64 holds.
		cost, _, _ := m.prices.Cost(*req.Model, res.TokensIn, res.TokensOut)
		if !(cost <= MaxCostUSD) {
			return res, est, 0, sidecar.BadRequest("invalid_field", "fields \"tokens_in\" and \"tokens_out\" price this call of %q at $%.6g, above the $%g a call may cost", *req.Model, cost, MaxCostUSD)
		}
		nano, res.CostSource = sessionstore.NanoUSD(cost), "price_table"
	default:
		res.CostSource = "unknown_model"
	}
	// The answer's cost is the integer the record sums, not the float
	// product (0.00036, not 0.00035999999999999997).
	res.CostUSD = sessionstore.USD(nano)
	return res, est, nano, nil
}

// tokens returns the explicit count, else the estimate from text (and how
// many tokens were estimated).
func tokens(field string, explicit *int64, text *string) (n, estimated int64, err error) {
	if explicit != nil {
		if *explicit < 0 || *explicit > MaxTokens {
			return 0, 0, sidecar.BadRequest("invalid_field", "field %q must be a whole number from 0 to %d", field, int64(MaxTokens))
		}
		return *explicit, 0, nil
	}
	if text == nil {
		return 0, 0, nil
	}
	n = EstimateTokens(*text)
	return n, n, nil
}

func (m *Module) end(status string) sidecar.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		user, session, err := sidecar.SessionIDs(r)
		if err != nil {
			return err
		}
		summary, err := endSummary(r)
		if err != nil {
			return err
		}
		ended, err := m.store.End(r.Context(), user, session, status, summary)
		if err != nil {
			return err
		}
		st, err := m.store.Get(r.Context(), user, session)
		if err != nil {
			return err
		}
		if ended {
			m.metrics.sessionEnded(st.Record)
			m.store.CountEnded(status)
		}
		sidecar.WriteJSON(w, http.StatusOK, m.toJSON(st, true))
		return nil
	}
}

// endSummary reads the optional body {summary} of complete/fail; no body
// is no summary.
func endSummary(r *http.Request) (*string, error) {
	var req struct {
		Summary *string `json:"summary"`
	}
	if err := sidecar.DecodeOptionalJSON(r, &req); err != nil {
		return nil, err
	}
	if req.Summary != nil && utf8.RuneCountInString(*req.Summary) > sessionstore.MaxSummaryLength {
		return nil, sidecar.BadRequest("invalid_field", "field \"summary\" must be at most %d characters", sessionstore.MaxSummaryLength)
	}
	return req.Summary, nil
}

type listJSON struct {
	Sessions   []sessionJSON `json:"sessions"`
	NextCursor *string       `json:"next_cursor"`
}

func (m *Module) listUser(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	return m.list(w, r, user)
}

func (m *Module) listAll(w http.ResponseWriter, r *http.Request) error { return m.list(w, r, "") }

func (m *Module) list(w http.ResponseWriter, r *http.Request, user string) error {
	q := r.URL.Query()
	status := q.Get("status")
	switch status {
	case "", sessionstore.StatusRunning, sessionstore.StatusAbandoned, sessionstore.StatusCompleted, sessionstore.StatusFailed:
	default:
		return sidecar.BadRequest("invalid_query", "status must be running, abandoned, completed or failed")
	}
	limit, err := sidecar.QueryInt(r, "limit", DefaultLimit, 1, MaxLimit)
	if err != nil {
		return err
	}
	meta, err := sessionstore.MetadataQuery(q)
	if err != nil {
		return sidecar.BadRequest("invalid_query", "%v", err)
	}
	page, next, err := m.store.List(r.Context(), sessionstore.ListQuery{
		User: user, Status: status, Limit: limit, Cursor: q.Get("cursor"), AbandonAfter: m.abandonAfter, Metadata: meta,
	})
	if err != nil { // a bad cursor: 400 invalid_cursor
		return err
	}
	out := listJSON{Sessions: make([]sessionJSON, len(page))}
	for i, st := range page {
		out.Sessions[i] = m.toJSON(st, false)
	}
	if next != "" {
		out.NextCursor = &next
	}
	sidecar.WriteJSON(w, http.StatusOK, out)
	return nil
}

type statsJSON struct {
	Sessions    map[string]int64 `json:"sessions"`
	TokensIn    int64            `json:"tokens_in"`
	TokensOut   int64            `json:"tokens_out"`
	CostUSD     float64          `json:"cost_usd"`
	Calls       int64            `json:"calls"`
	Errors      int64            `json:"errors"`
	SuccessRate *float64         `json:"success_rate"`
}

func (m *Module) stats(w http.ResponseWriter, r *http.Request) error {
	st, err := m.store.Stats(r.Context(), m.abandonAfter)
	if err != nil {
		return err
	}
	out := statsJSON{
		Sessions: map[string]int64{
			sessionstore.StatusRunning: st.Running, sessionstore.StatusAbandoned: st.Abandoned,
			sessionstore.StatusCompleted: st.Completed, sessionstore.StatusFailed: st.Failed,
			"total": st.Running + st.Abandoned + st.Completed + st.Failed,
		},
		TokensIn: st.TokensIn, TokensOut: st.TokensOut, CostUSD: sessionstore.USD(st.CostNanoUSD),
		Calls: st.Calls, Errors: st.Errors,
	}
	if ended := st.Completed + st.Failed; ended > 0 {
		rate := float64(st.Completed) / float64(ended)
		out.SuccessRate = &rate
	}
	sidecar.WriteJSON(w, http.StatusOK, out)
	return nil
}

type modelTotalsJSON struct {
	Model     string  `json:"model"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	CostUSD   float64 `json:"cost_usd"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
}

func (m *Module) costByModel(w http.ResponseWriter, r *http.Request) error {
	kept := m.store.Limits.orDefaults().Days
	days, err := sidecar.QueryInt(r, "days", kept, 1, kept)
	if err != nil {
		return err
	}
	rows, err := m.store.CostByModel(r.Context(), days)
	if err != nil {
		return err
	}
	out := make([]modelTotalsJSON, len(rows))
	for i, row := range rows {
		out[i] = modelTotalsJSON{Model: row.Model, TokensIn: row.TokensIn, TokensOut: row.TokensOut,
			CostUSD: sessionstore.USD(row.CostNanoUSD), Calls: row.Calls, Errors: row.Errors}
	}
	sidecar.WriteJSON(w, http.StatusOK, map[string]any{"models": out})
	return nil
}

// Collectors implements sidecar.Collector.
func (m *Module) Collectors() []prometheus.Collector { return m.metrics.collectors() }

var (
	_ sidecar.Module    = (*Module)(nil)
	_ sidecar.Collector = (*Module)(nil)
)
