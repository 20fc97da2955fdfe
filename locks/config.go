package locks

import (
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
)

// MaxTTL is the longest lease a caller may ask for (ttl_ms) and the largest
// AGENTIC_LOCK_EXPIRE; a longer one is almost always a unit mistake.
const MaxTTL = 24 * time.Hour

// FenceTTL is how long a lock's fencing-token key {<name>}:fence outlives
// the last grant of that name (each grant sets it again), so a name used once
// leaves nothing behind for long. Tokens keep growing after it expires: a
// token is max(last + 1, Redis TIME in µs), and the key expires by that same
// clock, FenceTTL after the last token was taken from it (docs/locks.md has
// the proof). Twice the longest lease: the fence outlives every grant's TTL.
const FenceTTL = 2 * MaxTTL

// MaxWaitLimit is the largest AGENTIC_LOCK_TIMEOUT.
const MaxWaitLimit = 24 * time.Hour

// Config is the module's configuration (README.md "Configuration", Cognee's names).
type Config struct {
	// ExpireSeconds is the lock TTL when a caller gives no ttl_ms.
	ExpireSeconds int `env:"AGENTIC_LOCK_EXPIRE" envDefault:"240"`
	// TimeoutSeconds is the longest wait_ms a caller may ask for.
	TimeoutSeconds int `env:"AGENTIC_LOCK_TIMEOUT" envDefault:"300"`
	// ReplicaWaitMs, when above 0, makes every grant wait up to this long
	// for one replica to acknowledge it (WAIT 1 <ms>), and the answer say
	// whether it did. 0 (the default) skips it; use it only when the Redis
	// primary has replicas, or every grant waits the full time.
	ReplicaWaitMs int `env:"SIDECAR_LOCK_REPLICA_WAIT_MS" envDefault:"0"`
}

// MaxReplicaWait bounds SIDECAR_LOCK_REPLICA_WAIT_MS.
const MaxReplicaWait = 10 * time.Second

// LoadConfig parses and validates the module's variables from env.
func LoadConfig(env envconf.Env) (Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks values that parse but make no sense.
func (c Config) Validate() error {
	if c.ExpireSeconds <= 0 || time.Duration(c.ExpireSeconds)*time.Second > MaxTTL {
		return envconf.Invalid("AGENTIC_LOCK_EXPIRE", "%d must be 1-%d seconds", c.ExpireSeconds, int(MaxTTL/time.Second))
	}
	if c.TimeoutSeconds <= 0 || time.Duration(c.TimeoutSeconds)*time.Second > MaxWaitLimit {
		return envconf.Invalid("AGENTIC_LOCK_TIMEOUT", "%d must be 1-%d seconds", c.TimeoutSeconds, int(MaxWaitLimit/time.Second))
	}
	if c.ReplicaWaitMs < 0 || time.Duration(c.ReplicaWaitMs)*time.Millisecond > MaxReplicaWait {
		return envconf.Invalid("SIDECAR_LOCK_REPLICA_WAIT_MS", "%d must be 0 (off) to %d", c.ReplicaWaitMs, MaxReplicaWait.Milliseconds())
	}
	return nil
}

// ReplicaWait is SIDECAR_LOCK_REPLICA_WAIT_MS as a duration (0: off).
func (c Config) ReplicaWait() time.Duration { return time.Duration(c.ReplicaWaitMs) * time.Millisecond }

// DefaultTTL is AGENTIC_LOCK_EXPIRE as a duration.
func (c Config) DefaultTTL() time.Duration { return time.Duration(c.ExpireSeconds) * time.Second }

// MaxWait is AGENTIC_LOCK_TIMEOUT as a duration.
func (c Config) MaxWait() time.Duration { return time.Duration(c.TimeoutSeconds) * time.Second }
