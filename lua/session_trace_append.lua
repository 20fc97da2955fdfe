--! prelude: session_lib
-- session_trace_append: append one agent trace step (Cognee's
-- SessionAgentTraceEntry) and trim the trace list to SESSION_MAX_ENTRIES.
-- KEYS[1..5] the session's keys (session_lib.lua)
-- ARGV[1..2] TTL and max entries (session_lib.lua)
-- ARGV[3] the trace step, as Cognee's json.dumps writes it
-- returns the number of trace steps now stored.
redis.call('RPUSH', K_TRACES, ARGV[3])
trim(K_TRACES)
finish_write()
return redis.call('LLEN', K_TRACES)
