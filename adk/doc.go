// Package adk is the Google ADK session service module (docs/adk.md): an
// ADK session (app, user, session) is the sidecar session
// <user>/<SidecarSession(app, session)> ("<app>.<session>", or "adk-" and a
// SHA1 when that is no id), so two apps' sessions of one id are two
// sessions, and the stock TTL slide, delete and erasure cover them. Its
// events, its state and the state its user's sessions of the app share
// (`user:` keys) are keys of the user's slot; the state every user of the
// app shares (`app:` keys) is a key of the app's own slot, which on Redis
// Cluster adk_app.lua writes after the event (not atomically with it).
// appendEvent is one script: the event and its state delta together,
// refused as a whole when the caller's copy is stale. Listings follow ADK's
// rules (order, limit/offset/page); an app's sessions across users come
// from an index sharded per bucket. The TypeScript client's
// SidecarSessionService (@agentsidecar/client/adk) is ADK's
// BaseSessionService over these routes (under /v1/adk/apps/{app_name}).
//
// Files:
//   - adk.go: Factory, the module, its routes and handlers (create, list,
//     get a page of events with the merged state, delete, appendEvent).
//   - config.go: Config (ADK_MAX_EVENTS, ADK_MAX_EVENT_BYTES,
//     ADK_MAX_STATE_BYTES, ADK_MAX_SESSIONS) and their ceilings.
//   - applist.go: an app's sessions without a user: the index's shards
//     merged a chunk at a time, next_cursor of shard ranks, gone sessions
//     taken out.
//   - store.go: Store, the module's scripts over the shared runner.
//   - keys.go: SidecarSession and the module's families (ADK record,
//     session state, events; the user's state and session list per app; the
//     app's state; the app's index across users).
//   - scripts.go: embeds and registers the scripts and their library.
//   - adk.lua: the library: keys, reads refusing another type, state hashes
//     and their byte count, delta triples, what a write declares to the core,
//     sidecar_id (as Go's SidecarSession).
//   - adk_create.lua, adk_append.lua, adk_read.lua, adk_list.lua,
//     adk_unlist.lua: create, append (event and delta, the stale check),
//     read a page newest first, list the user's, take a gone session out.
//   - adk_app.lua: the app: state delta on Cluster.
//
// Tests: adk_test.go, more_test.go and apps_test.go run a session's life on
// miniredis, redis-server and a cluster (two apps with the same ids,
// listings across users and their pages, concurrent writers on two
// sidecars, the stock TTL and delete covering ADK keys, refusals, bounded
// reads, state limits); erasure_test.go a user's erasure removing every ADK
// key; types_test.go wrong-typed keys refused with nothing written;
// cancel_internal_test.go the app delta outliving a cancelled caller;
// cost_test.go a write's Redis commands; bench_test.go benchmarks.
package adk
