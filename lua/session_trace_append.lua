--! prelude: session_lib
-- session_trace_append: append one agent trace step (Cognee's
-- SessionAgentTraceEntry) and trim the trace list to SESSION_MAX_ENTRIES.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the trace step, as Cognee's json.dumps writes it
-- emits trace_appended (the step).
-- returns 1, or 2 when this started the session.
local refused = guard('keep', { K_TRACES, 'list' })
if refused then return refused end
local created = redis.call('RPUSH', K_TRACES, ARGV[5]) == 1
trim(K_TRACES)
emit('trace_appended', 'trace', nil, ARGV[5])
local _, started = finish_write(false, created)
return stored_flag(started)
