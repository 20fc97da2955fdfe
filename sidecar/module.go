package sidecar

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Module is one capability of the sidecar: a name and the /v1 routes it
// serves. Extra powers are optional interfaces the host discovers by type
// assertion: Collector, Checker, Closer.
//
// The lifecycle, as in Caddy: New (parse config strictly, validate, build)
// → routes served → Close at shutdown. New must not need Redis to be up:
// it gets a *redisstore.Conn that answers ErrUnavailable until connected.
type Module interface {
	Name() string
	Routes() []Route
}

// Route is one ServeMux pattern ("POST /v1/locks/{name}") and its handler.
type Route struct {
	Pattern string
	Handler HandlerFunc
	// Timeout overrides the host's request deadline (SIDECAR_REQUEST_TIMEOUT)
	// for routes that may legitimately wait longer, such as a blocking lock
	// acquire; zero keeps the default.
	Timeout time.Duration
	// MaxBodyBytes overrides SIDECAR_MAX_BODY_BYTES for a route whose
	// bodies are larger by design (a batch of messages); zero keeps the
	// default. Its bytes in flight still count against the host's budget
	// (SIDECAR_INFLIGHT_BYTES).
	MaxBodyBytes int64
	// Stream marks a long-lived answer (Server-Sent Events): no request
	// deadline and no server read or write deadline (the handler sets a
	// write deadline before each write with http.ResponseController), no
	// SIDECAR_MAX_INFLIGHT slot and no SIDECAR_MAX_CONNECTIONS slot (the
	// module caps its own streams; the connection closes after the
	// stream), and its context is cancelled as soon as the host begins to
	// shut down, before the API drains. Its connection is active, so
	// idle-connection shedding never closes it.
	Stream bool
	// Query lists the query parameters the route takes; a name ending in
	// ".*" takes every parameter with that prefix ("metadata.*"). The host
	// answers any other (a misspelt ?lastn=3, say) 400 unknown_parameter
	// listing these, before the handler runs, so a parameter is never
	// silently ignored. None: the route takes no query parameters.
	Query []string
}

// HandlerFunc is an HTTP handler that returns its error instead of writing
// it: the host turns it into the error envelope (API errors as they are,
// Redis outages as 503 + Retry-After, anything else as a logged 500).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Collector is a module that exports Prometheus metrics.
type Collector interface {
	Collectors() []prometheus.Collector
}

// Checker is a module with something to check before the sidecar is ready
// (its scripts loaded, say). It is called by /readyz after Redis answered.
type Checker interface {
	Check(ctx context.Context) error
}

// Closer is a module holding resources (goroutines, subscriptions) to free at
// shutdown. Close runs after the API stopped serving, every module's at
// once, each with a context of its own that ends after CloseTimeout (not
// what the drain left): honour it. An error, or a Close still running at
// that deadline, is logged with the module's name; the other modules and
// the exit go on.
type Closer interface {
	Close(ctx context.Context) error
}

// Deps is what the host hands every module.
type Deps struct {
	Redis  *redisstore.Conn
	Logger *slog.Logger // already tagged with module=<name>
	Env    envconf.Env  // parse the module's own config with Env.Parse(&cfg)
	// Registerer is the sidecar's (non-global) metrics registry, for metrics
	// a module records itself; Collector is the alternative.
	Registerer prometheus.Registerer
	// RequestTimeout is SIDECAR_REQUEST_TIMEOUT, for a route with a longer
	// Route.Timeout that still has to bound its own Redis calls by it.
	RequestTimeout time.Duration
	// ShuttingDown is closed when the host begins to shut down (SIGTERM).
	// A handler blocked on a wait (a lock acquire's wait_ms, say) selects
	// on it beside its request's context, stops waiting and returns
	// ErrShuttingDown: the caller gets 503 shutting_down with Retry-After
	// at once. Short work needs nothing: it finishes within the drain, and
	// a request still running near the end of ShutdownGrace has its
	// context cancelled with cause ErrShuttingDown (answered 503
	// shutting_down too). Nil (never closed) in a Deps no host made.
	ShuttingDown <-chan struct{}
	// Limits are the settings modules share (SIDECAR_MAX_ANSWER_BYTES,
	// SEARCH_INDEX, ...), parsed and checked once by the host: a module
	// reads them here, never from Env.
	Limits Limits

	shared *sharedValues // the host's values shared by its modules (Shared)
}

// sharedValues holds one value per key for every module of one host.
type sharedValues struct {
	mu sync.Mutex
	m  map[string]any
}

// Shared returns the host's one value under key, built by build the first
// time any module asks: modules that extend one concept (the session's
// settings and store, say) share one instance and one parse of its
// configuration, as Caddy's modules share an app. A Deps not made by a host
// (a test's) shares nothing: build runs every time.
func Shared[T any](deps Deps, key string, build func(Deps) (T, error)) (T, error) {
	if deps.shared == nil {
		return build(deps)
	}
	deps.shared.mu.Lock()
	defer deps.shared.mu.Unlock()
	if v, ok := deps.shared.m[key]; ok {
		t, ok := v.(T)
		if !ok {
			return t, fmt.Errorf("shared value %q is a %T, not a %T", key, v, t)
		}
		return t, nil
	}
	v, err := build(deps)
	if err != nil {
		return v, err
	}
	deps.shared.m[key] = v
	return v, nil
}

// Factory registers a module with the host: its name and its constructor.
// cmd/sidecar lists the factories of the product in one place.
type Factory struct {
	Name string
	New  func(ctx context.Context, deps Deps) (Module, error)
}

// Select returns the factories enabled by spec, a comma list of names or
// "all" (also the meaning of an empty spec). An unknown name is an error that
// names SIDECAR_MODULES and lists the known ones.
func Select(all []Factory, spec string) ([]Factory, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		return all, nil
	}
	known := make([]string, len(all))
	for i, f := range all {
		known[i] = f.Name
	}
	var out []Factory
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(strings.ToLower(name))
		if name == "" {
			continue
		}
		i := slices.Index(known, name)
		if i < 0 {
			return nil, envconf.Invalid("SIDECAR_MODULES", "unknown module %q (known: %s)", name, strings.Join(known, ","))
		}
		if !slices.ContainsFunc(out, func(f Factory) bool { return f.Name == name }) {
			out = append(out, all[i])
		}
	}
	if len(out) == 0 {
		return nil, envconf.Invalid("SIDECAR_MODULES", "no module named; use a comma list or all")
	}
	return out, nil
}
