-- events_abort: record or clear a request to abort the session's work
-- (record field abort_requested_at, Redis TIME in µs). A status change
-- (session_end, registry_lib's end_session) also clears it; so will the
-- next user message (session.clear_abort).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] 'set' or 'clear'
-- emits abort {abort_requested_at} when it sets the request, abort_cleared
--   {} when it clears one.
-- returns (reply.lua) {'ok', time µs} set now ({'ok', ''} cleared now);
--   {'dup', time µs} already set ({'dup', ''} none to clear): nothing
--   written; {'missing'} no such session; {'refused', ...} when the user is
--   fenced (being erased) or a key it reads or writes is not what the
--   sidecar keeps there (nothing written).
--- @include reply
--- @include clock
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local set = ARGV[2] == 'set'
if set and c.abort then return session.reply(c, reply.dup(c.abort)) end
if not set and not c.abort then return session.reply(c, reply.dup('')) end
events.use(c)
refused = session.commit(c)
if refused then return refused end
if not set then
  session.clear_abort(c)
  events.emit(c, 'abort_cleared', 'state', nil, '{}')
  session.finish(c)
  return session.reply(c, reply.ok(''))
end
local now = session.now(c)
local at = string.format('%d', now)
events.emit(c, 'abort', 'state', nil, '{"abort_requested_at":"' .. clock.iso_time(now) .. '"}')
session.finish(c, { 'abort_requested_at', at })
-- the answer carries the request it made, as every later one does
c.abort = at
return session.reply(c, reply.ok(at))
