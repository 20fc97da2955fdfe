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
	// The script tells a family's keys by the prefix before their first ':'
	// (an index it sweeps, by its prefix and the bucket's tag).
	for _, f := range redisstore.Families() {
		if f.Scope != redisstore.ScopeLock && f.Scope != redisstore.ScopeChannel && strings.ContainsAny(f.Prefix, ":=\n ") {
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

// sweepIndexes are the bucket's indexes across users that name users in
// their members, each "<prefix>=<glob>" (the glob of one user's members,
// redisstore.UserMember standing for the user), one a line, as the
// script takes them: the families with SessionMembers (the metadata
// indexes: "<user>:*") but the lifecycle sets, which the script names
// itself, and those with UserMembers (ADK's app index). The erasure
// sweeps them for the members of the user's sessions that expired, or
// went by a route that does not know the index.
func sweepIndexes() string {
	var out []string
	for _, f := range redisstore.Families() {
		if f.Scope != redisstore.ScopeBucket {
			continue
		}
		glob := f.UserMembers
		if f.SessionMembers && f.Prefix != redisstore.GlobalIndexFamily.Prefix {
			glob = redisstore.UserMember + ":*"
		}
		if item := f.Prefix + "=" + glob; glob != "" && !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return strings.Join(out, "\n")
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
	prefixes, sweep := userPrefixes(), sweepIndexes()
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
