-- blocks_read: the user's blocks and, for a session, the session's, read
-- at one instant, with their digest (lib: blocks.lua) for a frozen prompt
-- made from them. Writes nothing (lua.ReadOnly). A key of another type is
-- Redis's WRONGTYPE, which the sidecar answers as a 409 key_wrong_type.
-- KEYS[1] the session's record (lib/session.lua; only its user, session
--   and tag are used); "-" for the user's blocks alone
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] '1': the session's blocks too, else '0'
-- ARGV[3] '1': their digest too (for a freeze), else '0'
-- returns (reply.lua) {'ok', user blocks (field, value, ...), session
--   blocks (idem), digest or ''}
-- Bounded: each hash holds at most BLOCKS_MAX_PER_USER / BLOCKS_MAX_PER_SESSION
-- blocks (at most 128) of at most BLOCKS_MAX_CONTENT_BYTES (at most 256 KiB),
-- checked by every write; with the defaults 32 blocks of 32 KiB, 1 MiB a hash.
--- @include reply
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local user_blocks = redis.call('HGETALL', c.ublocks)
local session_blocks = {}
if ARGV[2] == '1' then session_blocks = redis.call('HGETALL', c.blocks) end
local d = ''
if ARGV[3] == '1' then d = blocks.digest_of(user_blocks, session_blocks) end
return reply.ok(user_blocks, session_blocks, d)
