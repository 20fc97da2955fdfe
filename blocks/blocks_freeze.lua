-- blocks_freeze: store the session's frozen system prompt, rendered by the
-- sidecar from a blocks_read whose digest it passes: stored only while the
-- blocks are still as read, so a frozen prompt is never older than a
-- block write that finished before it.
-- KEYS[1..15] the session's keys, indexes and totals (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] 'freeze': store unless a prompt is frozen already; 'refresh':
--   store in its place
-- ARGV[6] the digest of the blocks it was rendered from
-- ARGV[7] the prompt, ARGV[8] its tokens
-- returns {'ok', 'stored', prompt, tokens, frozen_at, started} stored now
--   (started: 1 when this started the session, else 0);
--   {'dup', prompt, tokens, frozen_at} the prompt frozen before (freeze
--   only, nothing written); {'ok', 'changed'} the blocks changed since the
--   read (nothing written: render again); {'refused', 'key_wrong_type',
--   text} (nothing written) when a key it would write holds another type
--   (session.guard) or a record field finish_write reads is not what the
--   scripts keep (session_refused).
--- @include reply
--- @include clock
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local refused = session.guard(c, 'keep', { c.prompt, 'hash' }, { c.blocks, 'hash' }, { c.ublocks, 'hash' })
if refused then return refused end
if ARGV[5] == 'freeze' then
  local p = redis.call('HMGET', c.prompt, 'prompt', 'tokens', 'frozen_at')
  if p[1] and p[2] and p[3] then return reply.dup(p[1], p[2], p[3]) end
end
refused = blocks.session_refused(c)
if refused then return refused end
if blocks.digest(c, true) ~= ARGV[6] then return reply.ok('changed') end
local now = string.format('%d', clock.now_us())
local new_key = redis.call('EXISTS', c.prompt) == 0
redis.call('HSET', c.prompt, 'prompt', ARGV[7], 'tokens', ARGV[8], 'frozen_at', now)
local _, started = session.finish_write(c, false, new_key)
blocks.slide_user(c)
return reply.ok('stored', ARGV[7], ARGV[8], now, started and 1 or 0)
