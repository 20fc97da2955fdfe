--! prelude: session_lib
-- session_delete: remove the whole session: entries, traces, context, record,
-- qa_id index, usage ids, and its place in every index set. The usage totals
-- across sessions keep what it spent (they are all-time counters).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- returns the number of the session's own keys removed (0: no such session).
local refused = guard('indexes')
if refused then return refused end
unindex()
return redis.call('DEL', unpack(SESSION_KEYS))
