// Package registry is the session registry module (docs/registry.md):
// sessions created with a title and metadata (409 session_exists, or the
// same answer again for a repeated Idempotency-Key), their title and
// metadata changed by merge patch, start-or-reuse of a user's active
// session with auto-closing and auto-summaries, and per-session and
// per-user state changed by JSON merge patch (RFC 7396, byte-preserving).
//
// It writes the shared session (sessionstore) through its own scripts. A
// session's metadata is indexed per (key, value) in two activity indexes of
// the session core (the user's, and the bucket's across users), which the
// metadata-filtered listings of sessionstore read; start-or-reuse examines
// a bounded number of candidates (the match's metadata index, else the
// running index) and closes at most 16 abandoned ones per call.
//
// Files:
//   - registry.go: Factory, the module, its routes, create and update.
//   - active.go: start-or-reuse and end of the active session, and the
//     bounded context its answer carries (sessions_context: the recently
//     ended sessions; recent: the newest entries and messages).
//   - state.go: session and user state: reads and merge patches, limits.
//   - validate.go: title and metadata checks and limits.
//   - store.go: Store: Create, Update, Active, ActiveEnd, state writes.
//   - keys.go: the module's families (session state, user state); the
//     metadata indexes are redisstore's.
//   - scripts.go: embeds and registers the scripts and their library.
//   - registry.lua: the library: metadata index names, index_in and
//     index_out of their pairs, the bounded candidate scan, drop_expired,
//     auto-summary, merge_patch.
//   - registry_create.lua, registry_update.lua, registry_active.lua,
//     registry_active_end.lua, registry_state.lua, registry_user_state.lua:
//     one script per write.
//   - testdata/fuzz/: the merge patch fuzzer's corpus.
//
// Tests: registry_test.go, active_test.go, state_test.go and list_test.go
// run the routes on both backends and a cluster (create, patches, RFC 7396
// examples, concurrent start-or-reuse, metadata listings);
// active_staged_test.go an active session's recent messages without a
// staged append's; integrity_test.go the indexes' TTLs, wrong-typed keys refused before any
// write, unreadable state; bounded_test.go and cost_test.go the Redis
// commands a call runs; state_fuzz_test.go FuzzStateMergePatch;
// bench_test.go benchmarks.
package registry
