package sessionstore

import (
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
)

// Config holds the session settings every module that stores or reads
// sessions shares. It is parsed and validated in one place, LoadConfig.
type Config struct {
	// TTLSeconds is the sliding TTL of every key of a session; 0 = no expiry.
	TTLSeconds int `env:"SESSION_TTL_SECONDS" envDefault:"604800"`
	// MaxEntries keeps about the N newest entries of a session list; 0 = unbounded.
	MaxEntries int `env:"SESSION_MAX_ENTRIES" envDefault:"0"`
	// AbandonAfterSeconds: a running session idle longer than this reads
	// as abandoned.
	AbandonAfterSeconds int `env:"SESSION_ABANDON_AFTER_SECONDS" envDefault:"1800"`
	// EventsMaxLen keeps about the N newest events of a session's (and a
	// user's) event stream (XADD MAXLEN ~).
	EventsMaxLen int `env:"SESSION_EVENTS_MAXLEN" envDefault:"1000"`
	// Events is when the writes record their events: "watched" (only
	// while a reader watches the stream, and a grace period after; the
	// events module keeps the marker) or "always".
	Events string `env:"SESSION_EVENTS" envDefault:"watched"`
}

// The values of SESSION_EVENTS.
const (
	EventsWatched = "watched"
	EventsAlways  = "always"
)

// MaxEventsMaxLen bounds SESSION_EVENTS_MAXLEN: a reader's replay and the
// stream's memory grow with it.
const MaxEventsMaxLen = 100000

// DefaultEventsMaxLen is SESSION_EVENTS_MAXLEN's default.
const DefaultEventsMaxLen = 1000

// LoadConfig parses and validates the session settings from env.
func LoadConfig(env envconf.Env) (Config, error) { return envconf.Load[Config](env) }

// Validate refuses values that parse but make no sense.
func (c Config) Validate() error {
	if c.TTLSeconds < 0 {
		return envconf.Invalid("SESSION_TTL_SECONDS", "must be 0 (no expiry) or more, not %d", c.TTLSeconds)
	}
	if c.MaxEntries < 0 {
		return envconf.Invalid("SESSION_MAX_ENTRIES", "must be 0 (unbounded) or more, not %d", c.MaxEntries)
	}
	if c.AbandonAfterSeconds < 1 {
		return envconf.Invalid("SESSION_ABANDON_AFTER_SECONDS", "must be at least 1, not %d", c.AbandonAfterSeconds)
	}
	if c.EventsMaxLen < 1 || c.EventsMaxLen > MaxEventsMaxLen {
		return envconf.Invalid("SESSION_EVENTS_MAXLEN", "must be 1 to %d, not %d", MaxEventsMaxLen, c.EventsMaxLen)
	}
	if c.Events != EventsWatched && c.Events != EventsAlways {
		return envconf.Invalid("SESSION_EVENTS", "must be %s or %s, not %q", EventsWatched, EventsAlways, c.Events)
	}
	return nil
}

// AbandonAfter is SESSION_ABANDON_AFTER_SECONDS as a duration.
func (c Config) AbandonAfter() time.Duration {
	return time.Duration(c.AbandonAfterSeconds) * time.Second
}

// GrainMax is the longest the bookkeeping of a session may wait: its
// place in the lifecycle indexes and the expiry set, and its TTL slide
// (lib/session.lua, commit).
const GrainMax = 60 * time.Second

// Grain is how stale a session's lifecycle bookkeeping may get: a write
// within the grain of the session's last bookkeeping writes only its own
// job and the record; the first write after it also moves the session's
// scores in the status sets and its activity indexes, its expiry, and
// slides the TTL of every key it has. It is GrainMax, at most a thirtieth
// of SESSION_ABANDON_AFTER_SECONDS (so "abandoned" is exact to it), and
// the scripts cap it at a thousandth of the session's TTL.
func (c Config) Grain() time.Duration {
	return min(GrainMax, c.AbandonAfter()/30)
}
