--! prelude: blocks_lib
-- blocks_delete: delete one block of the user or of the session (a
-- session's blocks hash that empties is gone: Redis drops empty hashes).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] 'user' or 'session': whose block
-- ARGV[6] the label (lower-case)
-- emits block_changed {label, scope, deleted: true}.
-- returns 1 deleted, 0 no such block (nothing written); guard's KEYTYPE or
--   session_refused's BADKEY error (nothing written).
local session = ARGV[5] == 'session'
local key = session and K_BLOCKS or K_UBLOCKS
local refused = guard('keep', { key, 'hash' }, { K_USER_EVENTS, 'stream' })
if refused then return refused end
if session then
  refused = session_refused()
  if refused then return refused end
end
if redis.call('HDEL', key, ARGV[6]) == 0 then return 0 end
if session then finish_write(false, false) end
slide_user_blocks()
block_changed(ARGV[5], ARGV[6], nil)
return 1
