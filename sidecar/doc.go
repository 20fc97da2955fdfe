// Package sidecar is the host: it runs modules behind two listeners, the API
// (/v1, loopback by default) and ops (/healthz, /readyz, /metrics,
// /openapi.json), and is the whole API a module author needs.
//
// # A module's life
//
// A Factory names a module and builds it. Main (or Run) parses the host's
// configuration, selects the factories SIDECAR_MODULES enables, opens Redis
// and calls each factory's New with Deps: the Redis connection (usable at
// once; it answers redisstore.ErrUnavailable until connected), a logger
// tagged module=<name>, the environment, the metrics registry, the request
// timeout and Limits, the settings several modules share (parsed and checked
// once, with the host's Config). New parses the module's own settings
// strictly (envconf.Load) and must not need Redis to be up. If one New
// fails, the modules already built are closed. Then the host registers each
// module's Routes, and the optional powers it discovers by type assertion:
// Collector (metrics), Checker (part of /readyz), Closer (run at shutdown,
// every module's at once with a CloseTimeout context of its own). Modules
// that extend one concept share one value through Shared (the session store,
// say).
//
// # A request's path
//
// instrument (count and time by route pattern, JSON for unknown routes) →
// refuseWhenStopping (503 shutting_down once shutdown began) → shedOverload
// (503 overloaded) → authenticate (SIDECAR_API_TOKEN) → gate (503 until
// Redis first connects) → the route: panic recovery, the body limit
// (Route.MaxBodyBytes, else SIDECAR_MAX_BODY_BYTES), the body counted
// against the in-flight byte budget (a list answer by ReserveAnswer before
// it is read), the deadline, then the module's HandlerFunc. A handler
// returns its error instead of writing it; the host maps it once for every
// module: an *Error as it is, a store's refusals (redisstore.ErrNotFound,
// ErrConflict, ErrPrecondition, or a *redisstore.Refusal with its code) as
// 404, 409 and 412, a Redis outage as 503 with Retry-After, anything else as
// a logged 500 whose detail never reaches the client. A Route.Stream
// (Server-Sent Events) skips the in-flight and connection caps and every
// deadline, and its context ends when shutdown begins.
//
// On SIGTERM the host ends every Stream route, closes Deps.ShuttingDown (a
// handler blocked on a wait returns ErrShuttingDown: 503 shutting_down),
// answers new requests 503 shutting_down while the listener stays open, and
// lets the requests in flight finish within ShutdownGrace (those still
// running near its end are cancelled with cause ErrShuttingDown); then the
// listeners close and the modules close.
//
// # What a module may and may not do
//
// A module may serve any /v1 route no other module serves (a conflicting
// pattern is an error at start), keep its own keys in Redis (families it
// registers with redisstore.Register, with a TTL policy), run its own Lua
// scripts (lua.New) and register its own metrics. It must not import another
// module, write a session key outside one atomic script, block Redis with
// unbounded work, or hold a goroutine past Close. Decode bodies with
// DecodeJSON and validate ids with PathIDs, so every module refuses bad
// input alike. docs/modules.md walks through writing a module, with
// examples/hello.
//
// Files:
//   - module.go: the contract: Module, Route (Query, MaxBodyBytes, Stream),
//     HandlerFunc, Collector, Checker, Closer, Deps, Shared, Factory,
//     Select.
//   - main.go: Main (arguments, signals, exit codes) and Run: config →
//     logger → memory limit → Redis → modules → serve.
//   - host.go: building the modules, the listeners with their deadlines and
//     connection cap, Run, the redis-up gauge.
//   - middleware.go: the request path above (instrument, authenticate, gate,
//     route, serveStream); JSON 404/405 and unclean paths.
//   - limits.go: the pod's budget: the connection cap shedding idle
//     connections, then the slowest upload; in-flight and memory shedding
//     (503 overloaded); the memory limit from the cgroup; draining refused
//     bodies.
//   - budget.go: the in-flight byte budget (SIDECAR_INFLIGHT_BYTES): bodies
//     counted as they arrive, answers by ReserveAnswer.
//   - shutdown.go: the drain (ShutdownGrace, ErrShuttingDown) and each
//     module's Close within CloseTimeout.
//   - ops.go: /healthz, /readyz (Ready: PING, scripts, recent refusals,
//     module checks), /metrics, /openapi.json; loading the scripts at start.
//   - config.go: Config (README's table), LoadConfig, NewLogger.
//   - settings.go: Limits, the settings several modules share
//     (SIDECAR_MAX_ANSWER_BYTES, SIDECAR_MAX_MESSAGE_BODY_BYTES,
//     SESSION_MAX_ITEM_BYTES, SEARCH_INDEX as SearchIndex).
//   - errors.go: Error and the envelope, WriteJSON/WriteBody, and the one
//     mapping of returned errors to statuses.
//   - request.go: id validation (PathID, PathIDs, SessionIDs), DecodeJSON
//     and its variants, IdempotencyKey, query parameters (Route.Query,
//     QueryInt).
//   - strict.go: the strictness every body passes (valid UTF-8, no lone
//     surrogates, MaxDepth, float64 numbers, exact member names).
//   - fields.go: ObjectFields, a hot handler's quick path over a flat JSON
//     object, falling back to DecodeJSONBytes.
//   - cursor.go: the one cursor codec (EncodeCursor, DecodeCursor) and
//     BadCursor, every listing's 400 invalid_cursor.
//   - headers.go: SetAnswerHeader (a header set from deep in a call),
//     TruncatedHeader and MarkTruncated.
//   - series.go: NewCounter, NewCounterVec, NewGauge, NewHistogramVec: a
//     metric declared in one line.
//   - metrics.go: Version, NewRegistry (non-global, build info), HTTP
//     metrics by route pattern, refusal and shedding counters.
//   - sidecartest/: a real host on loopback for tests (its own package).
//
// Tests: host_test.go drives a small Redis-backed module through the host
// (routes, SIDECAR_MODULES, token, outage, startup, metrics);
// limits_test.go, limits_internal_test.go, budget_test.go and
// refusals_test.go cover stalled and slow bodies, connection shedding,
// overload, 413 without resets and Redis's own refusals (OOM, READONLY,
// BUSY); shutdown_test.go the drain; request_test.go, decode_error_test.go,
// cursor_test.go and config_test.go the decoders, cursors and settings, with
// fuzzers in request_fuzz_test.go and cursor_test.go.
package sidecar
