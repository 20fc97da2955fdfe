-- blocks_put: create or replace one block of the user or of the session.
-- A replaced block keeps its created_at (its place among equal positions).
-- KEYS[1] the session's record (lib/session.lua); for a user block that
--   of any session of the user ("-": only its user and tag are used, no
--   record is written)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] 'user' or 'session': whose block
-- ARGV[3] the label (lower-case)
-- ARGV[4] the block: a JSON object without created_at and updated_at
--   (added here); its tokens already checked against its max_tokens
-- ARGV[5] the most blocks the user (or the session) may have
-- emits block_changed (the session's stream, or the user's for a user block).
-- returns (reply.lua) {'ok', block, created, started}: the stored block,
--   created 1 (0: it replaced one), started 1 when this started the
--   session (else 0); {'refused', 'too_many_blocks', text} the scope has
--   ARGV[5] blocks already; {'refused', 'key_wrong_type', text} when a key
--   it reads or writes holds another type, or the record is not what the
--   core keeps (session.begin); {'refused', ...} when the user is fenced.
--   Nothing is written when refused.
-- Redis commands, a session block replaced within the grain: the marker
--   and the record (session.begin), HGET, TYPE of the user's blocks, TIME,
--   HSET, the record's HSET, EXPIRE of the user's blocks (and an XADD and
--   a PUBLISH when the session's events are recorded).
--- @include reply
--- @include json
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local refused = session.begin(c)
if refused then return refused end
local of_session = ARGV[2] == 'session'
local scope, label, most = ARGV[2], ARGV[3], tonumber(ARGV[5])
local key = of_session and c.blocks or c.ublocks
local old
old, refused = blocks.read(c, 'HGET', key, label)
if refused then return refused end
local n
if not old then
  n = redis.call('HLEN', key)
  if n >= most then
    local owner, setting = 'user ' .. c.uid, 'BLOCKS_MAX_PER_USER'
    if of_session then owner, setting = 'session ' .. c.uid .. '/' .. c.sid, 'BLOCKS_MAX_PER_SESSION' end
    return reply.refused('too_many_blocks', owner .. ' has ' .. ARGV[5] .. ' blocks, the most allowed (' .. setting
      .. '); delete one first; nothing was written')
  end
end
refused = blocks.commit(c, of_session and { { blocks.BLOCKS, true } } or nil, scope)
if refused then return refused end
local now = string.format('%d', session.now(c))
local created_at = now
if old then
  local f = blocks.fields(old)
  if f and f.created_at then created_at = f.created_at end
end
local block = json.set_fields(ARGV[4], { { 'created_at', created_at }, { 'updated_at', now } })
redis.call('HSET', key, label, block)
if of_session and n == 0 then session.made(c, blocks.BLOCKS) end
blocks.changed(c, scope, label, block)
local started = blocks.finish(c)
return session.reply(c, reply.ok(block, old and 0 or 1, started and 1 or 0))
