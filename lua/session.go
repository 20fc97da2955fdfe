package lua

// Session scripts (sessions, ttl and usage modules). Every one but
// session_sweep takes the session's keys, indexes and totals and
// SESSION_TTL_SECONDS, SESSION_MAX_ENTRIES, user_id, session_id first; see
// lib/session.lua.
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
	SessionUsage         = load("session_usage")
	SessionEnd           = load("session_end")
	SessionSweep         = load("session_sweep")
	SessionRead          = load("session_read", ReadOnly)
	SessionIndexBuild    = load("session_index_build")
	// The search index of the session's Q&A entries (package search).
	SessionSearchPending = load("session_search_pending", ReadOnly)
	SessionSearchCatchup = load("session_search_catchup")
	SessionSearchEntry   = load("session_search_entry")
	// SearchMark opens and moves the user's index marker (SEARCH_INDEX=on-demand).
	SearchMark = load("search_mark")
)
