--! prelude: session_lib
-- session_delete: remove the whole session: entries, traces, context, record
-- and index.
-- KEYS[1..5] the session's keys (session_lib.lua)
-- ARGV[1..2] unused (session_lib.lua)
-- returns the number of keys removed (0: there was no such session).
return redis.call('DEL', unpack(SESSION_KEYS))
