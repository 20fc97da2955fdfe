-- adk_unlist: take an ADK session that is gone (deleted, expired, erased)
-- out of its user's list of the app's sessions and out of the app's index
-- across users (module adk): after deleteSession, and for the members a
-- listing across users finds dead (the core's delete leaves them: adk.lua).
-- Only when its record is gone: a session created again since keeps its
-- places. No session is written (no fence: it only drops members).
-- KEYS[1] the session's record (lib/session.lua; only its user, session
--   and tag are used)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] app name
-- ARGV[3] the ADK session id
-- returns (reply.lua) {'ok', 1} taken out; {'ok', 0} the session exists:
--   nothing done; {'refused', 'key_wrong_type', text}: nothing done.
--- @include reply
--- @include guard
--- @include session
--- @include adk

local c = session.open(KEYS, ARGV)
local k = adk.keys(c, ARGV[2], '', ARGV[3])
if redis.call('EXISTS', k.rec) == 1 then return reply.ok(0) end
local refused = guard.check({ { k.index, 'zset' } }) or adk.check_apps(k)
if refused then return refused end
redis.call('ZREM', k.index, k.sid)
adk.unlist(k.apps, k.member)
return reply.ok(1)
