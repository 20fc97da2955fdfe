// Package hello is a module written from outside the sidecar, as anyone
// would write one without forking: two routes, a setting, Lua scripts, a
// key family of its own that lives and dies with the session, one that
// lives as long as the user's sessions, and a metric. cmd/sidecar-hello is
// its binary: the stock modules plus this one. docs/modules.md walks
// through it.
//
// POST /v1/users/{user_id}/hello counts a user's greetings in a key of the
// module's own (counterKey, its own TTL) with a plain script. POST
// /v1/users/{user_id}/sessions/{session_id}/hello runs its script on the
// session core (--- @include session) through the shared session runner:
// because its families are registered (redisstore.Register), the stock
// session TTL slide and delete cover the session key, and the user's
// stock writes and erasure cover the user key, though no stock file names
// them.
//
// Files:
//   - hello.go: Factory, Config (HELLO_GREETING via envconf.Load), the
//     module, its routes and greetings counter, the scripts registered with
//     lua.New.
//   - keys.go: SessionFamily (sidecar_hello_session) and UserFamily
//     (sidecar_hello_user).
//   - hello.lua: the user's counter, INCR and EXPIRE.
//   - hello_session.lua: the session's and the user's counters on the
//     session core (begin, use, keep, commit), with a live x-hello event.
//   - cmd/sidecar-hello/: its binary (its own package).
//
// Tests: hello_test.go runs the stock modules plus hello on all three
// backends (answers, TTLs, metric, script loaded and pinned), the session
// key slid and deleted by the stock routes, the user key slid by another
// session's write and erased with the user, a bad setting, and the binary
// built and run on a real redis-server.
package hello
