package blocks

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "blocks", New: New}

// Config is the module's settings: the bounds on blocks. A scope's blocks
// hold at most MaxPer* × MaxContentBytes (1 MiB by default, 32 MiB at
// most): what one read of them, or a frozen prompt, may cost Redis.
type Config struct {
	// MaxPerUser is the most blocks a user may have.
	MaxPerUser int `env:"BLOCKS_MAX_PER_USER" envDefault:"32"`
	// MaxPerSession is the most blocks a session may have (beside the user's).
	MaxPerSession int `env:"BLOCKS_MAX_PER_SESSION" envDefault:"32"`
	// MaxContentBytes is the largest content of one block, in UTF-8 bytes.
	MaxContentBytes int `env:"BLOCKS_MAX_CONTENT_BYTES" envDefault:"32768"`
}

// Validate implements envconf.Validator.
func (c Config) Validate() error {
	for _, r := range []struct {
		name      string
		v, lo, hi int
	}{
		{"BLOCKS_MAX_PER_USER", c.MaxPerUser, 1, 128},
		{"BLOCKS_MAX_PER_SESSION", c.MaxPerSession, 1, 128},
		{"BLOCKS_MAX_CONTENT_BYTES", c.MaxContentBytes, 1, 256 << 10},
	} {
		if r.v < r.lo || r.v > r.hi {
			return envconf.Invalid(r.name, "must be from %d to %d, not %d", r.lo, r.hi, r.v)
		}
	}
	return nil
}

// Module serves the block, system-prompt and tool routes.
type Module struct {
	store   *Store
	cfg     Config
	logger  *slog.Logger
	index   *search.Index // the host's relevance index (session_search)
	metrics *metrics
	mcp     http.Handler // the sessions' MCP server (mcp.go)
}

// New reads the module's settings and takes the host's session store.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, cfg, x, err := search.Open[Config](deps)
	if err != nil {
		return nil, err
	}
	m := &Module{store: &Store{Store: s, cfg: cfg, mode: x.Mode()}, cfg: cfg, logger: deps.Logger, index: x, metrics: newMetrics()}
	m.mcp = m.newMCP()
	return m, nil
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "blocks" }

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	const user = "/v1/users/{user_id}"
	const session = user + "/sessions/{session_id}"
	return []sidecar.Route{
		{Pattern: "GET " + user + "/blocks", Handler: m.list(scopeUser)},
		{Pattern: "GET " + user + "/blocks/{label}", Handler: m.get(scopeUser)},
		{Pattern: "PUT " + user + "/blocks/{label}", Handler: m.put(scopeUser)},
		{Pattern: "POST " + user + "/blocks/{label}/append", Handler: m.appendTo(scopeUser)},
		{Pattern: "DELETE " + user + "/blocks/{label}", Handler: m.delete(scopeUser)},
		{Pattern: "GET " + session + "/blocks", Handler: m.list(scopeSession)},
		{Pattern: "GET " + session + "/blocks/{label}", Handler: m.get(scopeSession)},
		{Pattern: "PUT " + session + "/blocks/{label}", Handler: m.put(scopeSession)},
		{Pattern: "POST " + session + "/blocks/{label}/append", Handler: m.appendTo(scopeSession)},
		{Pattern: "DELETE " + session + "/blocks/{label}", Handler: m.delete(scopeSession)},
		{Pattern: "GET " + session + "/system-prompt", Handler: m.systemPrompt, Query: []string{"format", "frozen"}},
		{Pattern: "POST " + session + "/system-prompt/refresh", Handler: m.refreshPrompt, Query: []string{"format"}},
		{Pattern: "GET " + session + "/tools", Handler: m.listTools, Query: []string{"format"}},
		{Pattern: "POST " + session + "/tools/{name}", Handler: m.callTool},
		{Pattern: "POST " + session + "/mcp", Handler: m.serveMCP},
	}
}

// Collectors implements sidecar.Collector: the MCP server's counters.
func (m *Module) Collectors() []prometheus.Collector { return m.metrics.collectors() }

var (
	_ sidecar.Module    = (*Module)(nil)
	_ sidecar.Collector = (*Module)(nil)
)
