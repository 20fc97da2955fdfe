// Package locks is the sidecar's lock module (docs/locks.md): named locks
// for processes that take turns on shared work, interoperable with
// redis-py's Lock, with fencing tokens, refresh, and blocking waits woken
// by Pub/Sub.
//
// A lock named n is the Redis key n holding its holder's random token, set
// with SET n token NX PX ttl, exactly as redis-py stores it. Its companions
// {n}:fence (the last fencing token, max(last + 1, Redis TIME in µs), kept
// FenceTTL after the last grant) and {n}:meta (owner, fence and ttl of a
// sidecar holder, expiring with the lock) share n's Redis Cluster slot.
// Every state change is one Lua script; expiry is always relative (PX),
// never the pod's clock. A blocked acquire waits on one Pub/Sub
// subscription per sidecar (release publishes), with a re-check at the
// holder's expiry as a safety net. A lock name may not be one of the
// sidecar's own key names (redisstore.Reserved).
//
// Files:
//   - locks.go: Factory, the module (New starts the one release
//     subscription), its routes, Close.
//   - config.go: Config (AGENTIC_LOCK_EXPIRE, AGENTIC_LOCK_TIMEOUT,
//     SIDECAR_LOCK_REPLICA_WAIT_MS), MaxTTL, FenceTTL.
//   - handlers.go: acquire, refresh, release, inspect; grants whose caller
//     hung up released.
//   - request.go: request and answer types; ttl_ms, wait_ms, owner and
//     token validation.
//   - names.go: a lock name is an id that is not reserved (400 invalid_id).
//   - loop.go: the blocking acquire: try, then sleep until a release
//     message or the re-check.
//   - wait.go: the one subscription multiplexed over waiters; MaxRecheck.
//   - store.go: the scripts on a lock's keys, WAIT for replicas, the
//     lock_key_conflict refusal.
//   - keys.go: the module's families (lock, fence, meta: explicit patterns;
//     the release channel), KeysOf, ReleaseChannel.
//   - metrics.go: sidecar_lock_* and the held-locks gauge (no name, owner
//     or token as a label).
//   - scripts.go: embeds and registers the scripts (AcquireScript and
//     ReleaseScript exported for cmd/sidecar-bench).
//   - lockholder.lua: the library lock_acquire and lock_inspect include:
//     the lock's holder as its meta hash tells it.
//   - lock_acquire.lua, lock_refresh.lua, lock_release.lua,
//     lock_inspect.lua: take (with the fencing token), extend,
//     compare-and-delete and publish, read.
//   - testdata/pylock.py: redis-py's Lock for the interop test.
//   - client/: deprecated aliases of package client (its own package).
//
// Tests: locks_test.go runs the routes on both backends (lifecycle,
// Redis's clock, bad input, metrics, concurrent goroutines, a Redis
// restart); wait_test.go waits woken or timed out, cancelled waiters,
// outage, shutdown; process_test.go contention of
// processes through sidecars (the test binary re-execs as worker);
// redispy_test.go redis-py interop; fence_test.go fencing tokens and
// companion keys; waiting_test.go what a waiter costs Redis; acl_test.go a
// user refused the release channel; replica_test.go WAIT; names_test.go the
// reserved names, refused and documented; bench_test.go benchmarks.
package locks
