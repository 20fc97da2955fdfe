// Package sessionstore is the session that several modules share: one
// session (user_id, session_id) has one record, one sliding TTL over all its
// keys and one set of status indexes, whether the sessions module writes
// Cognee's Q&A entries into it, the usage module counts an LLM call, or the
// ttl module gives it its own TTL. A module gets the host's one Store with
// FromDeps (or Open, with its own settings) and never imports another
// module.
//
// Store.Run and Store.Exec run a session script (a module's script on the
// session core, lua/lib/session.lua) with the core's per-call contract
// (KEYS the record and the user's marker, ARGV[1] the core's settings), so
// the write, the record, the indexes and the TTL move together; Run sets
// Sidecar-Abort-Requested on the answer while an abort is pending. Each
// module's own writes live with its handlers (sessions/store.go,
// usage/store.go, registry/store.go, ...).
//
// Files:
//   - config.go: Config (SESSION_TTL_SECONDS, SESSION_MAX_ENTRIES,
//     SESSION_ABANDON_AFTER_SECONDS, SESSION_EVENTS_MAXLEN, SESSION_EVENTS),
//     Grain, the bookkeeping's slack.
//   - open.go: Open, how a session module's New begins.
//   - store.go: Store (New, FromDeps), Run, Exec, ExecFound, StoredOf, and
//     what concerns every key of a session: Delete, SetTTL, TTL.
//   - record.go: Record, statuses ("abandoned" derived at read time), Get
//     (a session only Cognee wrote reads as running), Now.
//   - registry.go: the registry's fields of a record (title, metadata,
//     summary, end reason, message count).
//   - json.go: RecordJSON, the record as every module answers it.
//   - list.go: List, cursor pages of sessions by status and user, with the
//     bounded sweep of expired members.
//   - metadata.go: listings filtered by metadata (MetadataQuery, the
//     per-pair indexes, MetaScanFactor) and the metadata limits.
//   - stats.go: Stats (counts by status, all-time totals), CostByModel over
//     the per-day hashes, NanoUSD and USD.
//   - metrics.go: sidecar_sessions_started_total and
//     sidecar_sessions_ended_total (CountStarted, CountEnded).
//
// Tests: cluster_test.go reads across users merged over every shard, the
// per-bucket sweep and CACHE_HOST reaching a cluster; stats_test.go
// NanoUSD's clamps; cluster_bench_test.go and usage_bench_test.go compare
// standalone with a 3-master cluster and list abandoned sessions among many;
// main_test.go shares one cluster. The store's behaviour is tested through
// the modules that use it.
package sessionstore
