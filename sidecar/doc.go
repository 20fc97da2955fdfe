// Package sidecar is the host: it runs modules behind two listeners, the
// API (/v1, loopback by default) and ops (/healthz, /readyz, /metrics,
// /openapi.json), and is the whole API a module author needs.
//
// # A module's life
//
// A Factory names a module and builds it. Main (or Run) parses the host's
// configuration, selects the factories SIDECAR_MODULES enables, opens Redis
// and calls each factory's New with Deps: the Redis connection (usable at
// once; it answers redisstore.ErrUnavailable until connected), a logger
// tagged module=<name>, the environment, the metrics registry, the
// request timeout and Limits, the settings several modules share (parsed
// and checked once, with the host's Config). New parses the module's own settings strictly (use
// envconf.Load) and must not need Redis to be up. If one New fails, the
// modules already built are closed, so nothing leaks. Then the host
// registers each module's Routes, and the optional powers it discovers by
// type assertion: Collector (metrics), Checker (part of /readyz), Closer
// (run at shutdown, after the API stopped serving, every module's at once
// with a CloseTimeout context of its own). Modules that extend one concept
// share one value through Shared (the session store, say).
//
// # Shutdown
//
// On SIGTERM the host ends every Stream route, closes Deps.ShuttingDown (a
// handler blocked on a wait returns ErrShuttingDown: 503 shutting_down),
// answers new requests 503 shutting_down while the listener stays open,
// and lets the requests in flight finish within ShutdownGrace; those still
// running near its end have their context cancelled with cause
// ErrShuttingDown and answer 503 shutting_down too. Then the listeners
// close and the modules close (shutdown.go).
//
// # A request's path
//
// instrument (count and time by route pattern, JSON for unknown routes) →
// refuseWhenStopping (503 shutting_down once shutdown began) →
// shedOverload (503 overloaded) → authenticate (SIDECAR_API_TOKEN) → gate
// (503 until Redis first connects) → the route: panic recovery, the body
// limit (Route.MaxBodyBytes, else SIDECAR_MAX_BODY_BYTES), the body counted against the in-flight byte
// budget (budget.go; a list answer is counted by ReserveAnswer before it
// is read), the deadline, then the module's HandlerFunc. A handler returns its error instead of writing it;
// the host maps it once for every module: an *Error as it is, a store's
// refusals (redisstore.ErrNotFound, ErrConflict, ErrPrecondition, or a
// *redisstore.Refusal with its code) as 404, 409 and 412, a Redis outage
// as 503 with Retry-After, anything else as a logged 500 whose detail never
// reaches the client. A Route.Stream (Server-Sent Events) skips the
// in-flight and connection caps and every deadline, and its context ends
// when shutdown begins; a store may add an answer header through the
// request's context (SetAnswerHeader).
//
// # What a module may and may not do
//
// A module may serve any /v1 route no other module serves (a conflicting
// pattern is an error at start), keep its own keys in Redis (families it
// registers with redisstore.Register, with a TTL policy), run its own Lua scripts
// (lua.New) and register its own metrics. It must not import another module,
// write a session key outside one atomic script, block Redis with unbounded
// work, or hold a goroutine past Close. Decode bodies with DecodeJSON and
// validate ids with PathIDs, so every module refuses bad input alike.
//
// docs/modules.md walks through writing a module, with examples/hello,
// and lists what this package exports for module authors and what is the
// host's own.
package sidecar
