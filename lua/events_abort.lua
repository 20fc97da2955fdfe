-- events_abort: record or clear a request to abort the session's work
-- (record field abort_requested_at, Redis TIME in µs). A status change
-- (session_end, registry_lib's end_session) also clears it; so will the
-- next user message (clear_abort).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] 'set' or 'clear'
-- emits abort {abort_requested_at} when it sets the request, abort_cleared
--   {} when it clears one.
-- returns (reply.lua) {'ok', time µs} set now ({'ok', ''} cleared now);
--   {'dup', time µs} already set ({'dup', ''} none to clear): nothing
--   written; {'missing'} no such session; {'refused', ...} when a record
--   field it reads is corrupt (nothing written).
--- @include reply
--- @include clock
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'keep')
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local bad = session.check_finish(c, nil, false)
if bad then return reply.bad_key(bad) end
local at = redis.call('HGET', c.record, 'abort_requested_at')
if ARGV[5] == 'set' then
  if at then return reply.dup(at) end
  local now = clock.now_us()
  at = string.format('%d', now)
  redis.call('HSET', c.record, 'abort_requested_at', at)
  events.emit(c, 'abort', 'state', nil, '{"abort_requested_at":"' .. clock.iso_time(now) .. '"}')
  session.finish_write(c)
  return reply.ok(at)
end
if not at then return reply.dup('') end
session.clear_abort(c)
events.emit(c, 'abort_cleared', 'state', nil, '{}')
session.finish_write(c)
return reply.ok('')
