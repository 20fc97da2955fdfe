-- blocks_put: create or replace one block of the user or of the session.
-- A replaced block keeps its created_at (its place among equal positions).
-- KEYS[1..15] the session's keys, indexes and totals (session.lua); for
--   a user block any session of the user (only the tag is used)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] 'user' or 'session': whose block
-- ARGV[6] the label (lower-case)
-- ARGV[7] the block: a JSON object without created_at and updated_at
--   (added here); its tokens already checked against its max_tokens
-- ARGV[8] the most blocks the user (or the session) may have
-- emits block_changed (the session's stream, or the user's for a user block).
-- returns {'ok', block, created, started}: the stored block, created 1
--   (0: it replaced one), started 1 when this started the session (else
--   0); {'refused', 'too_many_blocks', text} the scope has ARGV[8] blocks
--   already; {'refused', 'key_wrong_type', text} when a key it would write
--   holds another type (session.guard) or, for a session block, a record
--   field finish_write reads is not what the scripts keep
--   (session_refused). Nothing is written when refused.
--- @include reply
--- @include json
--- @include clock
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local of_session = ARGV[5] == 'session'
local key = of_session and c.blocks or c.ublocks
local refused = session.guard(c, 'keep', { c.blocks, 'hash' }, { c.ublocks, 'hash' }, { c.user_events, 'stream' })
if refused then return refused end
if of_session then
  refused = blocks.session_refused(c)
  if refused then return refused end
end
local old = redis.call('HGET', key, ARGV[6])
if not old and redis.call('HLEN', key) >= tonumber(ARGV[8]) then
  local owner, setting = 'user ' .. c.uid, 'BLOCKS_MAX_PER_USER'
  if of_session then owner, setting = 'session ' .. c.uid .. '/' .. c.sid, 'BLOCKS_MAX_PER_SESSION' end
  return reply.refused('too_many_blocks', owner .. ' has ' .. ARGV[8] .. ' blocks, the most allowed (' .. setting
    .. '); delete one first; nothing was written')
end
local now = string.format('%d', clock.now_us())
local created_at = now
if old then
  local f = blocks.fields(old)
  if f and f.created_at then created_at = f.created_at end
end
local block = json.set_fields(ARGV[7], { { 'created_at', created_at }, { 'updated_at', now } })
local new_key = redis.call('EXISTS', key) == 0
redis.call('HSET', key, ARGV[6], block)
local started = false
if of_session then
  local _, st = session.finish_write(c, false, new_key)
  started = st
end
blocks.slide_user(c)
blocks.changed(c, ARGV[5], ARGV[6], block)
return reply.ok(block, old and 0 or 1, started and 1 or 0)
