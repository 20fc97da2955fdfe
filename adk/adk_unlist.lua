-- adk_unlist: take an ADK session that is gone (deleted, expired, erased)
-- out of its user's list of the app's sessions and out of the app's index
-- across users (module adk): after deleteSession, and for the members a
-- listing across users finds dead. Only when its record is gone: a session
-- created again since keeps its places.
-- KEYS[1..15] the session's keys (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] app name
-- ARGV[6] the ADK session id
-- returns {'ok', 1} taken out; {'ok', 0} the session exists: nothing done;
--   {'refused', 'key_wrong_type', text}.
--- @include reply
--- @include guard
--- @include session
--- @include adk

local c = session.open(KEYS, ARGV)
local app = ARGV[5]
local k = adk.keys(c, app, '', ARGV[6])
local checks = { { k.index, 'zset' } }
for _, o in ipairs(adk.ORDERS) do checks[#checks + 1] = { k.apps[o], 'zset' } end
local refused = guard.check(checks)
if refused then return refused end
if redis.call('EXISTS', k.rec) == 1 then return reply.ok(0) end
redis.call('ZREM', k.index, k.sid)
adk.unlist(k.apps, k.member)
return reply.ok(1)
