--! prelude: blocks_lib
-- blocks_freeze: store the session's frozen system prompt, rendered by the
-- sidecar from a blocks_read whose digest it passes: stored only while the
-- blocks are still as read, so a frozen prompt is never older than a
-- block write that finished before it.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] 'freeze': store unless a prompt is frozen already; 'refresh':
--   store in its place
-- ARGV[6] the digest of the blocks it was rendered from
-- ARGV[7] the prompt, ARGV[8] its tokens
-- returns {1, prompt, tokens, frozen_at, started} stored now;
--   {0, prompt, tokens, frozen_at} the prompt frozen before (freeze only,
--   nothing written); {-2} the blocks changed since the read (nothing
--   written: render again); guard's KEYTYPE or session_refused's BADKEY
--   error (nothing written).
local refused = guard('keep', { K_PROMPT, 'hash' }, { K_BLOCKS, 'hash' }, { K_UBLOCKS, 'hash' })
if refused then return refused end
if ARGV[5] == 'freeze' then
  local p = redis.call('HMGET', K_PROMPT, 'prompt', 'tokens', 'frozen_at')
  if p[1] and p[2] and p[3] then return { 0, p[1], p[2], p[3] } end
end
refused = session_refused()
if refused then return refused end
if digest(true) ~= ARGV[6] then return { -2 } end
local now = string.format('%d', now_us())
local new_key = redis.call('EXISTS', K_PROMPT) == 0
redis.call('HSET', K_PROMPT, 'prompt', ARGV[7], 'tokens', ARGV[8], 'frozen_at', now)
local _, started = finish_write(false, new_key)
slide_user_blocks()
return { 1, ARGV[7], ARGV[8], now, started and 1 or 0 }
