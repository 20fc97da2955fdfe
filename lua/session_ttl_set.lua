-- session_ttl_set: give the session its own TTL and apply it to every key of
-- the session at once. Later writes slide to this TTL instead of
-- SESSION_TTL_SECONDS, so a slide never shortens it.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the TTL in seconds; 0 = no expiry (persist)
-- emits ttl_changed {ttl_seconds}.
-- returns (reply.lua) {'ok'}, or {'missing'} when the session does not
--   exist (nothing is created); {'refused', ...}.
--- @include reply
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'keep')
if refused then return refused end
if not session.exists(c) then return reply.missing() end
redis.call('HSET', c.record, 'ttl_seconds', ARGV[5])
events.emit(c, 'ttl_changed', 'state', nil, '{"ttl_seconds":' .. string.format('%d', tonumber(ARGV[5])) .. '}')
session.finish_write(c, false, true)
return reply.ok()
