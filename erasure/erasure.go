// Package erasure is the module that erases a user: DELETE
// /v1/users/{user_id} removes every key of the user and the user's members
// of the indexes across users, in bounded steps (lua/user_erase.lua), so no
// step holds Redis for long, and answers 202 with an estimate of what is
// left when the request's deadline comes first. The progress lives in
// Redis (ProgressFamily), so a call from any pod continues it, and while it
// exists every write of the user is refused (409 user_erasing), so the
// erasure's scan misses no key written behind it.
package erasure

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "erasure", New: New}

// The bounds of one step (one script): it scans ScanCount keys of the
// user's node and erases at most SessionsPerStep sessions (and 50 times as
// many metadata index members).
const (
	ScanCount       = 200
	SessionsPerStep = 20
	// ProgressTTL is how long an erasure left half-way keeps refusing the
	// user's writes after its last step.
	ProgressTTL = time.Hour
	// Settle is how long a finished erasure keeps refusing writes (its
	// progress key's TTL then; SETTLE in lib/erasure.lua).
	Settle = 30 * time.Second
)

// Config is the module's setting.
type Config struct {
	// StepsPerCall bounds the steps of one call (0: until the request's
	// deadline is near).
	StepsPerCall int `env:"USER_ERASE_STEPS_PER_CALL" envDefault:"0"`
}

// Validate refuses a negative step count.
func (c Config) Validate() error {
	if c.StepsPerCall < 0 {
		return envconf.Invalid("USER_ERASE_STEPS_PER_CALL", "%d must be 0 (until the deadline) or more", c.StepsPerCall)
	}
	return nil
}

// Module serves DELETE /v1/users/{user_id}.
type Module struct {
	cfg      Config
	sessions *sessionstore.Store
}

// New parses the setting.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	store, cfg, err := sessionstore.Open[Config](deps)
	if err != nil {
		return nil, err
	}
	// The script tells a family's keys by the prefix before their first ':'.
	for _, f := range redisstore.Families() {
		if (f.Scope == redisstore.ScopeSession || f.Scope == redisstore.ScopeUser) && strings.Contains(f.Prefix, ":") {
			return nil, fmt.Errorf("erasure: family %q: prefix %q holds a ':'; the erasure could not tell its keys", f.Name, f.Prefix)
		}
	}
	return &Module{cfg: cfg, sessions: store}, nil
}

// Name is "erasure".
func (m *Module) Name() string { return "erasure" }

// Routes is the erasure's one route.
func (m *Module) Routes() []sidecar.Route {
	return []sidecar.Route{{Pattern: "DELETE /v1/users/{user_id}", Handler: m.erase}}
}

// Answer is the route's answer: 200 erased, or 202 with an estimate of the
// user's sessions left (call again).
type Answer struct {
	Erased    bool   `json:"erased"`
	Remaining *int64 `json:"remaining,omitempty"`
}

// userPrefixes are the prefixes of every user family but the progress's,
// space separated, as the script takes them.
func userPrefixes() string {
	var out []string
	for _, f := range redisstore.Families() {
		if f.Scope == redisstore.ScopeUser && f.Prefix != ProgressFamily.Prefix {
			out = append(out, f.Prefix)
		}
	}
	return strings.Join(out, " ")
}

// ProgressKey is user's progress key on layout l: in the user's slot (its
// bucket's tag), named by the SHA1 of the id.
func ProgressKey(l redisstore.Layout, user string) string {
	sum := sha1.Sum([]byte(user))
	return strings.TrimSuffix(l.UserKey(ProgressFamily, user), user) + hex.EncodeToString(sum[:])
}

func (m *Module) erase(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	done, remaining, err := m.Erase(r.Context(), user)
	if err != nil {
		return err
	}
	if done {
		sidecar.WriteJSON(w, http.StatusOK, Answer{Erased: true})
		return nil
	}
	sidecar.WriteJSON(w, http.StatusAccepted, Answer{Remaining: &remaining})
	return nil
}

// Erase runs steps of user's erasure until it is done, the call's step
// budget is spent or the deadline of ctx is near (two of the slowest steps
// so far, and 50 ms, before it); it returns whether the erasure is done and
// else an estimate of the sessions left.
func (m *Module) Erase(ctx context.Context, user string) (done bool, remaining int64, err error) {
	prefixes := userPrefixes()
	deadline, hasDeadline := ctx.Deadline()
	var slowest time.Duration
	for step := 0; ; step++ {
		if step > 0 {
			if m.cfg.StepsPerCall > 0 && step >= m.cfg.StepsPerCall {
				return false, remaining, nil
			}
			if hasDeadline && time.Until(deadline) < 2*slowest+50*time.Millisecond {
				return false, remaining, nil
			}
		}
		began := time.Now()
		rep, err := m.sessions.Run(ctx, lua.UserErase, user, "-", prefixes, strconv.Itoa(ScanCount),
			strconv.Itoa(SessionsPerStep), strconv.Itoa(int(ProgressTTL/time.Second)))
		if err != nil {
			return false, 0, fmt.Errorf("erase user %s: %w", user, err)
		}
		slowest = max(slowest, time.Since(began))
		fin, err := rep.Flag(0)
		if err != nil {
			return false, 0, redisstore.Wrap("user_erase", err)
		}
		if fin {
			return true, 0, nil
		}
		if remaining, err = rep.Int(1); err != nil {
			return false, 0, redisstore.Wrap("user_erase", err)
		}
	}
}

// Interface guards.
var (
	_ sidecar.Module    = (*Module)(nil)
	_ envconf.Validator = Config{}
)
