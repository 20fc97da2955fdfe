package hello

import (
	"context"
	_ "embed"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host: append it to the stock list
// (modules.All()) in a main of your own.
var Factory = sidecar.Factory{Name: "hello", New: New}

// CounterTTL is how long a user's counter lives after their last greeting.
const CounterTTL = 24 * time.Hour

// MaxGreetingLength bounds HELLO_GREETING.
const MaxGreetingLength = 64

//go:embed hello.lua
var helloSource string

// script is registered at package init like the stock scripts: EVALSHA,
// the sidecar_redis_script_* series labelled "hello", SCRIPT LOAD by /readyz.
var script = lua.New("hello", helloSource)

//go:embed hello_session.lua
var helloSessionSource string

// sessionScript writes a session: it includes the stock session library
// (--- @include session), the session core, so it keeps the session's
// record, indexes and TTLs as the stock session scripts do.
var sessionScript = lua.New("hello_session", helloSessionSource)

// counterKey is the one place the module's key is named. Its prefix has a
// ':' and the module's name, so it is nobody else's key (the stock keyspace,
// redisstore.Families(), takes no such name) and never looks like a lock name.
func counterKey(user string) string { return "sidecar_hello:" + user }

// Config is the module's setting.
type Config struct {
	// Greeting opens every answer.
	Greeting string `env:"HELLO_GREETING" envDefault:"Hello"`
}

// Validate refuses a greeting that is empty, too long or not printable,
// naming the variable (envconf.Load calls it).
func (c Config) Validate() error {
	notPrintable := func(r rune) bool { return !unicode.IsPrint(r) }
	if c.Greeting == "" || len(c.Greeting) > MaxGreetingLength || !utf8.ValidString(c.Greeting) || strings.ContainsFunc(c.Greeting, notPrintable) {
		return envconf.Invalid("HELLO_GREETING", "%q must be 1-%d bytes of printable UTF-8", c.Greeting, MaxGreetingLength)
	}
	return nil
}

// Module serves POST /v1/users/{user_id}/hello and
// POST /v1/users/{user_id}/sessions/{session_id}/hello.
type Module struct {
	cfg       Config
	redis     *redisstore.Conn
	sessions  *sessionstore.Store // the host's one session store, shared with the stock modules
	greetings prometheus.Counter
}

// New parses HELLO_GREETING; it needs no Redis yet (the connection answers
// 503 until it is up).
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	cfg, err := envconf.Load[Config](deps.Env)
	if err != nil {
		return nil, err
	}
	sessions, err := sessionstore.FromDeps(deps)
	if err != nil {
		return nil, err
	}
	return &Module{
		cfg:       cfg,
		redis:     deps.Redis,
		sessions:  sessions,
		greetings: sidecar.NewCounter("sidecar_hello_greetings_total", "Greetings answered by the hello module."),
	}, nil
}

// Name is "hello", the name SIDECAR_MODULES selects.
func (m *Module) Name() string { return "hello" }

// Routes are the module's routes: a user's greeting and a session's.
func (m *Module) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST /v1/users/{user_id}/hello", Handler: m.hello},
		{Pattern: "POST /v1/users/{user_id}/sessions/{session_id}/hello", Handler: m.helloSession},
	}
}

// Collectors registers the greetings counter with the host's registry.
func (m *Module) Collectors() []prometheus.Collector { return []prometheus.Collector{m.greetings} }

// Answer is the route's JSON answer.
type Answer struct {
	Greeting string `json:"greeting"`
	Count    int64  `json:"count"` // greetings of this user within CounterTTL of each other
}

func (m *Module) hello(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err // 400 invalid_id, as every module answers it
	}
	client, err := m.redis.Client()
	if err != nil {
		return err // not connected yet: 503
	}
	n, err := script.Exec(r.Context(), client, []string{counterKey(user)},
		[]string{strconv.Itoa(int(CounterTTL / time.Second))}).AsInt64()
	if err != nil {
		return redisstore.Wrap("hello", err) // an outage becomes 503 with Retry-After
	}
	m.greetings.Inc()
	sidecar.WriteJSON(w, http.StatusOK, Answer{Greeting: m.cfg.Greeting + ", " + user + "!", Count: n})
	return nil
}

// SessionAnswer is the session route's JSON answer.
type SessionAnswer struct {
	Greeting  string `json:"greeting"`
	SessionID string `json:"session_id"`
	Count     int64  `json:"count"`      // greetings of this session while it lives
	UserCount int64  `json:"user_count"` // session greetings of this user while their sessions live
}

// helloSession counts a greeting in the session's own key of
// SessionFamily and in the user's key of UserFamily, through the session
// runner: the script gets the session's record and the core's settings as
// every stock session script does, and a first greeting starts the
// session.
func (m *Module) helloSession(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	rep, err := m.sessions.Run(r.Context(), sessionScript, user, session, SessionFamily.Prefix, UserFamily.Prefix)
	if err != nil {
		return err // a key of another type: 409 key_wrong_type; an outage: 503
	}
	n, err := rep.Int(0)
	if err != nil {
		return redisstore.Wrap("hello_session", err)
	}
	u, err := rep.Int(1)
	if err != nil {
		return redisstore.Wrap("hello_session", err)
	}
	m.greetings.Inc()
	sidecar.WriteJSON(w, http.StatusOK, SessionAnswer{Greeting: m.cfg.Greeting + ", " + user + "!", SessionID: session, Count: n, UserCount: u})
	return nil
}

// Interface guards.
var (
	_ sidecar.Module    = (*Module)(nil)
	_ sidecar.Collector = (*Module)(nil)
	_ envconf.Validator = Config{}
)
