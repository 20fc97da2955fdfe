package locks

import (
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// MaxOwnerLength is the longest owner a caller may give.
const MaxOwnerLength = 256

// MaxTokenLength is the longest token accepted in refresh and release (ours
// are 32 characters; redis-py's too; other clients may use longer ones).
const MaxTokenLength = 256

type acquireRequest struct {
	Owner  string `json:"owner"`
	TTLMs  *int64 `json:"ttl_ms"`
	WaitMs *int64 `json:"wait_ms"`
}

type grantResponse struct {
	Token        string `json:"token"`
	FencingToken int64  `json:"fencing_token"`
	Owner        string `json:"owner"`
	ExpiresAt    string `json:"expires_at"` // Redis TIME + ttl, RFC 3339 UTC with milliseconds
	TTLMs        int64  `json:"ttl_ms"`
	// Replicated: a replica acknowledged the grant within
	// SIDECAR_LOCK_REPLICA_WAIT_MS (absent when that wait is off).
	Replicated *bool `json:"replicated,omitempty"`
}

type tokenRequest struct {
	Token string `json:"token"`
	TTLMs *int64 `json:"ttl_ms"`
}

type releaseRequest struct {
	Token string `json:"token"`
}

type releaseResponse struct {
	Released bool `json:"released"`
}

type inspectResponse struct {
	Held         bool   `json:"held"`
	Owner        string `json:"owner,omitempty"`
	TTLMs        *int64 `json:"ttl_ms,omitempty"` // -1: the key has no expiry
	FencingToken int64  `json:"fencing_token,omitempty"`
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// ttl validates ttl_ms; absent is AGENTIC_LOCK_EXPIRE, or 0 ("as acquired")
// for a refresh.
func (m *Module) ttl(v *int64, refresh bool) (time.Duration, error) {
	if v == nil {
		if refresh {
			return 0, nil
		}
		return m.cfg.DefaultTTL(), nil
	}
	if *v < 1 || *v > MaxTTL.Milliseconds() {
		return 0, sidecar.BadRequest("invalid_field", "ttl_ms must be 1-%d (24 h)", MaxTTL.Milliseconds())
	}
	return time.Duration(*v) * time.Millisecond, nil
}

func (m *Module) wait(v *int64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 || *v > m.cfg.MaxWait().Milliseconds() {
		return 0, sidecar.BadRequest("invalid_field", "wait_ms must be 0-%d (AGENTIC_LOCK_TIMEOUT)", m.cfg.MaxWait().Milliseconds())
	}
	return time.Duration(*v) * time.Millisecond, nil
}

func checkOwner(s string) error {
	if len(s) > MaxOwnerLength || !printable(s) {
		return sidecar.BadRequest("invalid_field", "owner must be at most %d bytes of printable UTF-8", MaxOwnerLength)
	}
	return nil
}

func checkToken(s string) error {
	if s == "" || len(s) > MaxTokenLength || !printable(s) {
		return sidecar.BadRequest("invalid_field", "token must be 1-%d printable characters (the token the acquire returned)", MaxTokenLength)
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
