-- blocks_delete: delete one block of the user or of the session (a
-- session's blocks hash that empties is gone: Redis drops empty hashes,
-- and the session no longer has the family: session.drop).
-- KEYS[1] the session's record (lib/session.lua); "-" for a user block
--   (only its user and tag are used, no record is written)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] 'user' or 'session': whose block
-- ARGV[3] the label (lower-case)
-- emits block_changed {label, scope, deleted: true}.
-- returns (reply.lua) {'ok'} deleted; {'missing'} no such block (nothing
--   written); {'refused', 'key_wrong_type', text} (nothing written) when a
--   key it reads or writes holds another type, or the record is not what
--   the core keeps (session.begin); {'refused', ...} when the user is
--   fenced.
--- @include reply
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local refused = session.begin(c)
if refused then return refused end
local of_session = ARGV[2] == 'session'
local key = of_session and c.blocks or c.ublocks
local n
n, refused = blocks.read(c, 'HLEN', key)
if refused then return refused end
if n == 0 or redis.call('HEXISTS', key, ARGV[3]) == 0 then return reply.missing() end
refused = blocks.commit(c, of_session and { { blocks.BLOCKS, true } } or nil, ARGV[2])
if refused then return refused end
redis.call('HDEL', key, ARGV[3])
if of_session and n == 1 then session.drop(c, blocks.BLOCKS) end
blocks.changed(c, ARGV[2], ARGV[3], nil)
blocks.finish(c)
return session.reply(c, reply.ok())
