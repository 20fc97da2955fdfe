// Package checkpoints is the LangGraph checkpoints module: a thread's
// checkpoints, their metadata, channel values by version and pending
// writes, kept as a LangGraph checkpoint saver keeps them, for the
// TypeScript client's SidecarCheckpointSaver (@agentsidecar/client/langgraph).
//
// A thread is a session: user = the saver's userId, session = the
// thread_id (the client encodes one session ids refuse). Its keys are two
// session families (keys.go), so checkpoints slide with the session's
// TTL, show in its record and metrics, and go with the session's delete
// and the user's erasure. Each put and each putWrites is one script
// (checkpoints_*.lua, in this package) with the session's bookkeeping and its event.
// The sidecar never decodes what the saver serialized: checkpoints,
// channel values and writes are {type, data} pairs, data the base64 of
// the serde's bytes. Metadata is JSON, so lists filter on it.
package checkpoints

import (
	"context"
	"log/slog"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "checkpoints", New: New}

// Fixed bounds of one request and one checkpoint (docs/checkpoints.md).
const (
	// MaxChannels is the most channels one checkpoint names (its
	// channel_versions), so a read fetches at most this many values.
	MaxChannels = 1000
	// MaxWrites is the most pending writes one checkpoint keeps, and one
	// putWrites sends.
	MaxWrites = 1000
	// MaxListLimit is the most checkpoints one list answers; MaxListScan
	// the most it examines (metadata filter) before answering a page with
	// next_before.
	MaxListLimit = 100
	MaxListScan  = 1000
	// DefaultListLimit is a list's limit when the query has none.
	DefaultListLimit = 20
)

// Config is the module's settings.
type Config struct {
	// MaxPerThread caps a thread's checkpoint ids, stored or holding
	// pending writes: past it a put of a new id, or writes to a new id, is
	// 409 checkpoints_full. The thread's channel values are capped at 100
	// times it (maxValues).
	MaxPerThread int `env:"CHECKPOINTS_MAX_PER_THREAD" envDefault:"10000"`
}

// Validate implements envconf.Validator.
func (c Config) Validate() error {
	if c.MaxPerThread < 1 || c.MaxPerThread > 1000000 {
		return envconf.Invalid("CHECKPOINTS_MAX_PER_THREAD", "must be from 1 to 1000000, not %d", c.MaxPerThread)
	}
	return nil
}

// maxValues is the most channel values a thread holds: 100 per
// checkpoint it may keep, and at least one full put's (MaxChannels).
func (c Config) maxValues() int { return max(100*c.MaxPerThread, MaxChannels) }

// Module serves the checkpoint routes. Of the host's shared limits it
// takes the messages' item cap (SESSION_MAX_ITEM_BYTES: one serialized
// checkpoint, channel value or write), their body cap
// (SIDECAR_MAX_MESSAGE_BODY_BYTES: a put's or putWrites' body) and the
// answer cap (a checkpoint read may hold max(it, the body cap): what one
// put sends).
type Module struct {
	store  *Store
	cfg    Config
	limits sidecar.Limits
	logger *slog.Logger
}

// New reads the module's settings and takes the host's session store.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, cfg, err := sessionstore.Open[Config](deps)
	if err != nil {
		return nil, err
	}
	return &Module{store: &Store{Store: s, cfg: cfg}, cfg: cfg, limits: deps.Limits, logger: deps.Logger}, nil
}

// readCap is the most bytes one checkpoint read may hold.
func (m *Module) readCap() int {
	return max(m.limits.MaxAnswerBytes, int(m.limits.MaxMessageBodyBytes))
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "checkpoints" }

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	const base = "/v1/users/{user_id}/sessions/{session_id}/checkpoints"
	return []sidecar.Route{
		{Pattern: "POST " + base, Handler: m.put, MaxBodyBytes: m.limits.MaxMessageBodyBytes},
		{Pattern: "POST " + base + "/writes", Handler: m.putWrites, MaxBodyBytes: m.limits.MaxMessageBodyBytes},
		{Pattern: "GET " + base + "/tuple", Handler: m.getTuple, Query: []string{"checkpoint_ns", "checkpoint_id"}},
		{Pattern: "GET " + base, Handler: m.list, Query: []string{"checkpoint_ns", "before", "limit", "filter"}},
	}
}

var _ sidecar.Module = (*Module)(nil)
