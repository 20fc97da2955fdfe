-- session_end: mark the session completed or failed (ended_at from Redis
-- TIME). Activity after the end is still recorded but never reopens it.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] 'completed' or 'failed' (also the end_reason)
-- ARGV[3] '1' when ARGV[4] is a summary to store (a human one:
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
local refused = session.begin(c)
if refused then return refused end
local want = ARGV[2]
if not session.exists(c) then return reply.missing() end
if c.status == want then return session.reply(c, reply.dup()) end
if c.status == 'completed' or c.status == 'failed' then
  return reply.refused('session_ended', 'session ' .. c.uid .. '/' .. c.sid .. ' already ended (' .. c.status .. ')')
end
events.use(c)
refused = session.commit(c, { status = want })
if refused then return refused end
local now = session.now(c)
local fields = { 'ended_at', string.format('%d', now), 'end_reason', want }
if ARGV[3] == '1' then
  fields[#fields + 1], fields[#fields + 2] = 'summary', ARGV[4]
  fields[#fields + 1], fields[#fields + 2] = 'summary_auto_generated', '0'
end
session.clear_abort(c)
events.emit(c, 'status', 'state', nil, '{"status":"' .. want .. '","end_reason":"' .. want .. '","ended_at":"' .. clock.iso_time(now) .. '"}')
session.finish(c, fields)
return session.reply(c, reply.ok())
