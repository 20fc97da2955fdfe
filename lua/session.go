package lua

// The core's scripts (package sessionstore, the session runner every
// module shares): a session's delete and TTL, and the sweep of expired
// sessions from the lifecycle indexes. lib/session.lua and
// lib/lifecycle.lua are the core every session write includes.
var (
	SessionDelete = load("session_delete")
	SessionTTLSet = load("session_ttl_set")
	SessionSweep  = load("session_sweep")
	// SessionMetaPrune is not a session script: KEYS are a metadata index
	// and a record. The metadata-filtered listings run it.
	SessionMetaPrune = load("session_meta_prune")
)
