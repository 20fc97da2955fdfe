package adk

import "github.com/agentsidecar/agentsidecar/envconf"

// Config holds the module's settings (README's configuration table).
type Config struct {
	// MaxEvents caps the events of one ADK session: past it appendEvent is
	// 409 session_full (a replaced event does not count again).
	MaxEvents int `env:"ADK_MAX_EVENTS" envDefault:"10000"`
	// MaxEventBytes caps one event's JSON.
	MaxEventBytes int `env:"ADK_MAX_EVENT_BYTES" envDefault:"1048576"`
	// MaxStateBytes caps each state: a session's, a user's of one app, an
	// app's (keys and JSON values counted).
	MaxStateBytes int `env:"ADK_MAX_STATE_BYTES" envDefault:"262144"`
	// MaxSessions caps a user's ADK sessions of one app (listSessions reads
	// them all, so it is bounded by this).
	MaxSessions int `env:"ADK_MAX_SESSIONS" envDefault:"1000"`
}

// Ceilings of the settings: one script holds an event and a delta whole,
// and walks at most MaxSessions members.
const (
	MaxEventsCeiling   = 100000
	MaxBytesCeiling    = 64 << 20
	MaxSessionsCeiling = 10000
)

// Validate refuses values that parse but make no sense.
func (c Config) Validate() error {
	if c.MaxEvents < 1 || c.MaxEvents > MaxEventsCeiling {
		return envconf.Invalid("ADK_MAX_EVENTS", "must be from 1 to %d, not %d", MaxEventsCeiling, c.MaxEvents)
	}
	if c.MaxEventBytes < 1024 || c.MaxEventBytes > MaxBytesCeiling {
		return envconf.Invalid("ADK_MAX_EVENT_BYTES", "must be from 1024 to %d, not %d", MaxBytesCeiling, c.MaxEventBytes)
	}
	if c.MaxStateBytes < 1024 || c.MaxStateBytes > MaxBytesCeiling {
		return envconf.Invalid("ADK_MAX_STATE_BYTES", "must be from 1024 to %d, not %d", MaxBytesCeiling, c.MaxStateBytes)
	}
	if c.MaxSessions < 1 || c.MaxSessions > MaxSessionsCeiling {
		return envconf.Invalid("ADK_MAX_SESSIONS", "must be from 1 to %d, not %d", MaxSessionsCeiling, c.MaxSessions)
	}
	return nil
}
