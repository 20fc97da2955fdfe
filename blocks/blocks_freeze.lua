-- blocks_freeze: store the session's frozen system prompt, rendered by the
-- sidecar from a blocks_read whose digest it passes: stored only while the
-- blocks are still as read, so a frozen prompt is never older than a
-- block write that finished before it.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] 'freeze': store unless a prompt is frozen already; 'refresh':
--   store in its place
-- ARGV[3] the digest of the blocks it was rendered from
-- ARGV[4] the prompt, ARGV[5] its tokens
-- returns (reply.lua) {'ok', 'stored', prompt, tokens, frozen_at,
--   started} stored now (started: 1 when this started the session, else
--   0); {'dup', prompt, tokens, frozen_at} the prompt frozen before
--   (freeze only, nothing written); {'ok', 'changed'} the blocks changed
--   since the read (nothing written: render again); {'refused',
--   'key_wrong_type', text} (nothing written) when a key it reads or
--   writes holds another type, or the record is not what the core keeps
--   (session.begin); {'refused', ...} when the user is fenced.
--- @include reply
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local refused = session.begin(c)
if refused then return refused end
local mode, prompt, tokens = ARGV[2], ARGV[4], ARGV[5]
if mode == 'freeze' then
  local p
  p, refused = blocks.read(c, 'HMGET', c.prompt, 'prompt', 'tokens', 'frozen_at')
  if refused then return refused end
  if p[1] and p[2] and p[3] then return session.reply(c, reply.dup(p[1], p[2], p[3])) end
end
local d
d, refused = blocks.digest(c)
if refused then return refused end
if d ~= ARGV[3] then return session.reply(c, reply.ok('changed')) end
refused = blocks.commit(c, { { blocks.PROMPT, mode == 'freeze' } })
if refused then return refused end
local now = string.format('%d', session.now(c))
-- three new fields: the key made anew (another program removed it) or
-- first made (session.use gives it its TTL then)
if redis.call('HSET', c.prompt, 'prompt', prompt, 'tokens', tokens, 'frozen_at', now) == 3 then
  session.made(c, blocks.PROMPT)
end
local started = blocks.finish(c)
return session.reply(c, reply.ok('stored', prompt, tokens, now, started and 1 or 0))
