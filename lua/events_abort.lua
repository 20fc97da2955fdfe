--! prelude: session_lib
-- events_abort: record or clear a request to abort the session's work
-- (record field abort_requested_at, Redis TIME in µs). A status change
-- (session_end, registry_lib's end_session) also clears it; so will the
-- next user message (clear_abort).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] 'set' or 'clear'
-- emits abort {abort_requested_at} when it sets the request, abort_cleared
--   {} when it clears one.
-- returns {1, time µs} set now ({1, ''} cleared now); {2, time µs} already
--   set ({2, ''} none to clear): nothing written; 0 no such session;
--   {-1, 'wrong_type', message} when a record field it reads is corrupt
--   (nothing written).
local refused = guard('keep')
if refused then return refused end
if not session_exists() then return 0 end
local bad = check_finish(nil, false)
if bad then return { -1, 'wrong_type', bad } end
local at = redis.call('HGET', K_RECORD, 'abort_requested_at')
if ARGV[5] == 'set' then
  if at then return { 2, at } end
  local now = now_us()
  at = string.format('%d', now)
  redis.call('HSET', K_RECORD, 'abort_requested_at', at)
  emit('abort', 'state', nil, '{"abort_requested_at":"' .. iso_time(now) .. '"}')
  finish_write()
  return { 1, at }
end
if not at then return { 2, '' } end
clear_abort()
emit('abort_cleared', 'state', nil, '{}')
finish_write()
return { 1, '' }
