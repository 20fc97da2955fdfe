package events

import (
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
)

// Config is the module's settings.
type Config struct {
	// Heartbeat is how often an idle stream gets a ": keepalive" comment,
	// and how often every watched stream is re-read whatever Pub/Sub said.
	Heartbeat time.Duration `env:"SIDECAR_SSE_HEARTBEAT" envDefault:"15s"`
	// MaxStreams caps the event streams one sidecar serves at once (their
	// own cap: they hold no SIDECAR_MAX_INFLIGHT slot).
	MaxStreams int `env:"SIDECAR_SSE_MAX_STREAMS" envDefault:"1000"`
	// GraceSeconds: with SESSION_EVENTS=watched, a stream's events are
	// still recorded this long after its last reader left, so a reconnect
	// within it replays without a gap.
	GraceSeconds int `env:"SESSION_EVENTS_GRACE_SECONDS" envDefault:"300"`
}

// Grace is SESSION_EVENTS_GRACE_SECONDS as a duration.
func (c Config) Grace() time.Duration { return time.Duration(c.GraceSeconds) * time.Second }

// refreshEvery is how often a reader refreshes its stream's marker: every
// heartbeat, and at least four times per grace period.
func (c Config) refreshEvery() time.Duration { return min(c.Heartbeat, c.Grace()/4) }

// Bounds of the settings.
const (
	MinHeartbeat = time.Second
	// MaxHeartbeat stays well under the 300 s a deleted session's tombstone
	// lives, so every reader sees its deleted event.
	MaxHeartbeat  = 2 * time.Minute
	MaxMaxStreams = 100000
	// MaxGraceSeconds: a day; past it, watch the stream instead.
	MaxGraceSeconds = 86400
)

// Validate refuses values that parse but make no sense.
func (c Config) Validate() error {
	if c.Heartbeat < MinHeartbeat || c.Heartbeat > MaxHeartbeat {
		return envconf.Invalid("SIDECAR_SSE_HEARTBEAT", "must be %s to %s, not %s", MinHeartbeat, MaxHeartbeat, c.Heartbeat)
	}
	if c.MaxStreams < 1 || c.MaxStreams > MaxMaxStreams {
		return envconf.Invalid("SIDECAR_SSE_MAX_STREAMS", "must be 1 to %d, not %d", MaxMaxStreams, c.MaxStreams)
	}
	if c.GraceSeconds < 1 || c.GraceSeconds > MaxGraceSeconds {
		return envconf.Invalid("SESSION_EVENTS_GRACE_SECONDS", "must be 1 to %d, not %d", MaxGraceSeconds, c.GraceSeconds)
	}
	return nil
}

// The module's fixed bounds (docs/operations.md).
const (
	// MaxLag: a subscriber more than MaxLag events behind is dropped (its
	// buffer is full); it reconnects with its Last-Event-ID.
	MaxLag = 1000
	// MaxDataBytes bounds a custom event's data (and a stored event's data
	// before it is replaced by {id, kind, truncated}).
	MaxDataBytes = 8192
	// RetryMillis is the reconnection delay a stream asks of its client.
	RetryMillis = 3000
	// readPage is the most events one read of a stream returns.
	readPage = 256
	// writeTimeout bounds one write of a stream to its client.
	writeTimeout = 10 * time.Second
)
