// Package lua runs the sidecar's Redis scripts: one .lua file per operation,
// each opening with its contract (KEYS, ARGV, returns). This package holds
// the session core's scripts and the shared libraries; each module keeps its
// own scripts (and a library of its own) beside its Go, embeds them and
// registers them at init (FromFS, LibraryFromFS, or New for a module outside
// the repository), so every script runs, counts in the metrics and loads at
// readiness alike.
//
// Shared Lua lives in small libraries (lib/*.lua, a module's own) a script
// includes by name ("--- @include session"; include.go): each library once,
// after those it includes. A script opens its call's context
// (session.open(KEYS, ARGV)) and passes it to every helper; no library keeps
// state between calls. Every script answers in one reply convention
// (lib/reply.lua), decoded by Decode (reply.go).
//
// Two call paths, one per client (Path):
//
//   - Redis Functions (Redis 7 and later): one library (library.go),
//     agentsidecar_scripts_<digest>, holds every included library once,
//     defined at FUNCTION LOAD, and each script as a function
//     <name>_<digest> called with FCALL (FCALL_RO for the scripts flagged
//     no-writes). EVAL would define a script's libraries again on every
//     call. The digest in the names lets two versions of the sidecar share
//     one Redis.
//   - EVALSHA, then EVAL when Redis answers NOSCRIPT (after a restart or
//     failover): miniredis, Redis 6, a user whose ACL refuses FUNCTION or
//     FCALL, a server that refused a library (OOM).
//
// Load (readiness, on every node of a cluster) holds both ready: SCRIPT LOAD
// and FUNCTION LOAD of what a node lacks, and decides the path. A call
// answered "Function not found" (FUNCTION FLUSH, a new or failed-over node)
// loads the library and is sent once more, then goes through EVALSHA if that
// did not help; a client Load has not seen tries FCALL and keeps to EVALSHA
// from the first refusal of the command. Both paths run the same text and
// answer the same (cmd/sidecar's TestScriptsAgreeOnBothPaths).
//
// Files:
//   - lua.go: Script, the registry of every script (the embedded ones and
//     New, FromFS, LibraryFromFS for a module's own), Exec, ExecThen,
//     ExecMulti, Observe, Load, All, Named, the script metrics.
//   - functions.go: the call path per client (Path), FCALL with one reload
//     on "Function not found", the fall-back to EVALSHA, LoadFunctions.
//   - library.go: the one Functions library (Libraries, Script.Function):
//     every included library once, each script a function, no-writes for the
//     read-only ones.
//   - package.go: Package, a module's scripts from its .lua files: the
//     libraries first, then one script per field of a struct.
//   - include.go: --- @include resolution (each library once, after those it
//     includes; unknown or cyclic includes panic at init), the EVAL text,
//     NewLibrary.
//   - keys.go: the generated library "keys": the prefixes and codes of the
//     registered session families, Cognee's lists, the user families of
//     session ids, the marker's registered fields.
//   - reply.go: Decode and Reply (the one reply convention), IndexBuild,
//     Refusal.
//   - session.go: the core's own scripts, SessionDelete, SessionTTLSet,
//     SessionSweep and SessionMetaPrune, which sessionstore runs.
//   - session_delete.lua, session_ttl_set.lua, session_sweep.lua,
//     session_meta_prune.lua: those scripts.
//   - lib/session.lua: the core of every session write: session.open, begin,
//     use, keep, index_in, commit, finish; the per-call contract.
//   - lib/lifecycle.lua: the core's bookkeeping: lifecycle, expiry and
//     activity indexes, the TTL slide of the session's and kept user keys.
//   - lib/families.lua: the families a session has (the record's fams) and
//     Cognee's lists.
//   - lib/marker.lua: the user's marker (fence, kept keys, registered
//     fields).
//   - lib/events.lua: events.emit and emit_user: a write's live event,
//     recorded always or only while watched (SESSION_EVENTS).
//   - lib/guard.lua: the one type check before a script's first write.
//   - lib/reply.lua: the one reply convention.
//   - lib/ring.lua: the one idempotency ring.
//   - lib/json.lua: byte-exact edits of JSON text (span scanner,
//     set_fields).
//   - lib/clock.lua: Redis's clock and the records' time formats.
//   - lib/idindex.lua, lib/listedit.lua: the sessions module's lists
//     (Cognee's entries, traces, context), their id indexes, trims and
//     removals.
//   - lib/meta.lua: the metadata index names and old TTL rule, kept for
//     scripts not yet on the core.
//   - testdata/scripts.sha1, testdata/libraries.txt: the pinned script
//     digests and library names (go test ./lua -update after a reviewed
//     change).
//
// Tests: lua_test.go pins every stock script's SHA1, checks each opens with
// its KEYS/ARGV/returns contract and loads on both backends, and that New
// and NewLibrary refuse bad names; functions_test.go the call path on each
// backend, FUNCTION FLUSH, ACL refusals and reads over maxmemory;
// headroom_internal_test.go every script's room for more locals and every
// Lua file at most 400 lines; libstate_internal_test.go that no library
// keeps call state at its top level; set_fields_test.go json's quick path
// against its scan. modules_test.go links every stock module, so the
// generated keys library and pinned digests are the product's.
package lua
