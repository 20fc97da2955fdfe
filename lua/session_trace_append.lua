-- session_trace_append: append one agent trace step (Cognee's
-- SessionAgentTraceEntry) and trim the trace list to SESSION_MAX_ENTRIES.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the trace step, as Cognee's json.dumps writes it
-- emits trace_appended (the step).
-- returns (reply.lua) {'ok', started} (started 1 when this started the
--   session); {'refused', ...}.
--- @include reply
--- @include json
--- @include session
--- @include events
--- @include idindex

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'keep', { c.traces, 'list' })
if refused then return refused end
local created = redis.call('RPUSH', c.traces, ARGV[5]) == 1
idindex.trim(c, c.traces)
events.emit(c, 'trace_appended', 'trace', nil, ARGV[5])
local _, started = session.finish_write(c, false, created)
return reply.ok(started and 1 or 0)
