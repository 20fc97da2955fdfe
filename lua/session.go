package lua

// Session scripts (sessions and ttl modules). Every one takes the session's
// five keys and SESSION_TTL_SECONDS, SESSION_MAX_ENTRIES first; see
// session_lib.lua.
var (
	SessionAppend        = load("session_append")
	SessionEntryGet      = load("session_entry_get")
	SessionEntryUpdate   = load("session_entry_update")
	SessionEntryDelete   = load("session_entry_delete")
	SessionTraceAppend   = load("session_trace_append")
	SessionContextAppend = load("session_context_append")
	SessionContextUpdate = load("session_context_update")
	SessionContextDelete = load("session_context_delete")
	SessionDelete        = load("session_delete")
	SessionTTLSet        = load("session_ttl_set")
)
