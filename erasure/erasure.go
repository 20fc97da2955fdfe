// Package erasure is the module that erases a user: DELETE
// /v1/users/{user_id} removes every key of the user and the user's members
// of the indexes across users, in bounded steps (user_erase.lua), so no
// step holds Redis for long, and answers 202 with an estimate of what is
// left when the request's deadline comes first. The progress lives in
// Redis, in the user's marker (redisstore.Layout.UserMarker, named by the
// user's SHA1), so a call from any pod continues it; with it the marker's
// fence, which refuses every write of the user (409 user_erasing) from the
// first step until Settle after the last, so the erasure's scan misses no
// key written behind it.
package erasure

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "erasure", New: New}

// The bounds of one step (one script): it scans ScanCount keys of the
// user's node and erases at most SessionsPerStep sessions (each: its
// members of the indexes its record lists, and its keys), or examines
// about 5 × ScanCount members of the indexes across users.
const (
	ScanCount       = 200
	SessionsPerStep = 20
	// ProgressTTL is how long an erasure left half-way keeps refusing the
	// user's writes after its last step (the marker's TTL while erasing).
	ProgressTTL = time.Hour
	// Settle is how long a finished erasure keeps refusing writes: the
	// marker then holds the fence alone, with this TTL.
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

// userPrefixes are the prefixes of every user family but the user's
// marker's (named by the user's SHA1, not the user: the script erases it
// by its own name), space separated, as the script takes them.
func userPrefixes() string {
	var out []string
	for _, f := range redisstore.Families() {
		if f.Scope == redisstore.ScopeUser && f.Prefix != redisstore.UserMarkerFamily.Prefix {
			out = append(out, f.Prefix)
		}
	}
	return strings.Join(out, " ")
}

// sweepPrefixes are the prefixes of the bucket's indexes across users
// whose members are "<user>:<session>" (bucket families with
// SessionMembers: the metadata indexes), but the lifecycle sets, which the
// script names itself: the erasure sweeps them for members of the user's
// sessions that expired.
func sweepPrefixes() string {
	var out []string
	for _, f := range redisstore.Families() {
		if f.Scope == redisstore.ScopeBucket && f.SessionMembers && f.Prefix != redisstore.GlobalIndexFamily.Prefix &&
			!slices.Contains(out, f.Prefix) {
			out = append(out, f.Prefix)
		}
	}
	return strings.Join(out, " ")
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
	prefixes, sweep := userPrefixes(), sweepPrefixes()
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
		rep, err := m.sessions.Run(ctx, luaScripts.Erase, user, "-", prefixes, sweep, strconv.Itoa(ScanCount),
			strconv.Itoa(SessionsPerStep), strconv.Itoa(int(ProgressTTL/time.Second)), strconv.Itoa(int(Settle/time.Second)))
		if err != nil {
			return false, 0, fmt.Errorf("erase user %s: %w", user, err)
		}
		slowest = max(slowest, time.Since(began))
		fin, err := rep.Flag(0)
		if err != nil {
			return false, 0, redisstore.Wrap(luaScripts.Erase.Name, err)
		}
		if fin {
			return true, 0, nil
		}
		if remaining, err = rep.Int(1); err != nil {
			return false, 0, redisstore.Wrap(luaScripts.Erase.Name, err)
		}
	}
}

// Interface guards.
var (
	_ sidecar.Module    = (*Module)(nil)
	_ envconf.Validator = Config{}
)
