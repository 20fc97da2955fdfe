// Package sessionstore is the session that several modules share: one
// session (user_id, session_id) has one record, one sliding TTL over all its
// keys and one set of status indexes, whether the sessions module writes
// Cognee's Q&A entries into it, the usage module counts an LLM call, or the
// ttl module gives it its own TTL.
//
// What lives here is what every such module needs alike:
//   - Config: the session settings (SESSION_TTL_SECONDS, SESSION_MAX_ENTRIES,
//     SESSION_ABANDON_AFTER_SECONDS, SESSION_EVENTS_MAXLEN), parsed once per
//     host (FromDeps);
//   - Store.Run and Store.Exec: the runner of a session script (a module's
//     script on the session core, lua/lib/session.lua), with the core's
//     per-call contract (KEYS the record and the user's marker, ARGV[1] the
//     core's settings), so the write, the record, the indexes and the TTL
//     move together; Run sets Sidecar-Abort-Requested on the answer
//     (sidecar.SetAnswerHeader) while the answer says an abort is pending;
//   - what concerns every key of a session, whichever module wrote it:
//     Delete, TTL, SetTTL;
//   - the record and the reads across sessions: Get, List (cursor pages by
//     status, "abandoned" derived at read time, metadata filters from the
//     per-(key, value) indexes), Stats, CostByModel; RecordJSON, the record
//     as every module answers it.
//   - the per-host sidecar_sessions_ended_total{end_reason} (CountEnded).
//
// Each module's own writes live with its handlers: sessions/store.go (Q&A
// entries, traces, context), usage/store.go (usage, complete/fail),
// registry/store.go (create, title/metadata, start-or-reuse, state).
package sessionstore
