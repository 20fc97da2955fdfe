-- session_end: mark the session completed or failed (ended_at from Redis
-- TIME). Activity after the end is still recorded but never reopens it.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] 'completed' or 'failed' (also the end_reason)
-- ARGV[6] '1' when ARGV[7] is a summary to store (a human one:
--   summary_auto_generated false), else '0'
-- A pending abort request is cleared. Emits status {status, end_reason,
--   ended_at}.
-- returns (reply.lua) {'ok'} when ended now; {'dup'} when it had already
--   ended with this status (nothing written); {'refused', 'session_ended',
--   ...} when it had ended with the other one, {'missing'} when there is no
--   such session (nothing created), {'refused', 'key_wrong_type', ...}
--   when a key it would write holds the wrong type (nothing written: every
--   check comes before the first write).
--- @include reply
--- @include clock
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'move')
if refused then return refused end
local want = ARGV[5]
if not session.exists(c) then return reply.missing() end
local bad = session.check_finish(c, nil, true)
if bad then
  return reply.refused('key_wrong_type', bad .. ' (another program wrote it); nothing was written: fix or delete that key')
end
local status = redis.call('HGET', c.record, 'status')
if status == want then return reply.dup() end
if status == 'completed' or status == 'failed' then
  return reply.refused('session_ended', 'session ' .. c.uid .. '/' .. c.sid .. ' already ended (' .. status .. ')')
end
local now = clock.now_us()
if status then
  redis.call('HSET', c.record, 'status', want, 'ended_at', string.format('%d', now), 'end_reason', want)
else -- a session only Cognee wrote: it started with its first entry
  redis.call('HSET', c.record, 'status', want, 'ended_at', string.format('%d', now), 'end_reason', want, 'started_at', session.started_at_of(c, now))
end
if ARGV[6] == '1' then
  redis.call('HSET', c.record, 'summary', ARGV[7], 'summary_auto_generated', '0')
end
session.clear_abort(c)
events.emit(c, 'status', 'state', nil, '{"status":"' .. want .. '","end_reason":"' .. want .. '","ended_at":"' .. clock.iso_time(now) .. '"}')
session.finish_write(c, true)
return reply.ok()
