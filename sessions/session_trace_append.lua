-- session_trace_append: append one agent trace step (Cognee's
-- SessionAgentTraceEntry) and trim the trace list to SESSION_MAX_ENTRIES.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] the trace step, as Cognee's json.dumps writes it
-- emits trace_appended (the step).
-- returns (reply.lua) {'ok', started} (started 1 when this started the
--   session); {'refused', ...}.
--- @include reply
--- @include session
--- @include events
--- @include idindex
--- @include listedit

local c = idindex.lists(idindex.open(session.open(KEYS, ARGV), ARGV[2]))
local refused = session.begin(c)
if refused then return refused end
-- the list's type is checked when the session first has it (Cognee
-- writes it too, but only as a list)
session.use(c, idindex.TRACES, 'list')
events.use(c)
refused = session.commit(c)
if refused then return refused end
local newlen = redis.call('RPUSH', c.traces, ARGV[3])
if newlen == 1 then session.made(c, idindex.TRACES) end
listedit.trim(c, c.traces, newlen)
events.emit(c, 'trace_appended', 'trace', nil, ARGV[3])
local started = session.finish(c)
return session.reply(c, reply.ok(started and 1 or 0))
