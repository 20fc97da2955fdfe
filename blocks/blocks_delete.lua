-- blocks_delete: delete one block of the user or of the session (a
-- session's blocks hash that empties is gone: Redis drops empty hashes).
-- KEYS[1..15] the session's keys, indexes and totals (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] 'user' or 'session': whose block
-- ARGV[6] the label (lower-case)
-- emits block_changed {label, scope, deleted: true}.
-- returns {'ok'} deleted; {'missing'} no such block (nothing written);
--   {'refused', 'key_wrong_type', text} (nothing written) when a key it
--   would write holds another type (session.guard), or a record field
--   finish_write reads is not what the scripts keep (session_refused).
--- @include reply
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local of_session = ARGV[5] == 'session'
local key = of_session and c.blocks or c.ublocks
local refused = session.guard(c, 'keep', { key, 'hash' }, { c.user_events, 'stream' })
if refused then return refused end
if of_session then
  refused = blocks.session_refused(c)
  if refused then return refused end
end
if redis.call('HDEL', key, ARGV[6]) == 0 then return reply.missing() end
if of_session then session.finish_write(c, false, false) end
blocks.slide_user(c)
blocks.changed(c, ARGV[5], ARGV[6], nil)
return reply.ok()
