-- hello_session: counts one more greeting in a session, in the module's own
-- session key (hello.SessionFamily), with the session's bookkeeping: the
-- record and indexes, the TTL slide of every key of the session (this one
-- among them: its family is registered as a session family) and the
-- session's live event.
-- KEYS[1..15] the session's keys, indexes and totals (lua/lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lua/lib/session.lua)
-- ARGV[5] the family's prefix, sidecar_hello_session
-- emits x-hello {"count": n}.
-- returns (lua/lib/reply.lua) {'ok', n}: the session's count after this
--   call; {'refused', 'key_wrong_type', ...} when a key it writes holds
--   another type, before anything is written.
--- @include reply
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local key = session.key(c, ARGV[5])
local refused, rec = session.guard(c, 'keep', { key, 'string' })
if refused then return refused end
local n = redis.call('INCR', key)
events.emit(c, 'x-hello', 'custom', nil, '{"count":' .. string.format('%d', n) .. '}')
-- a counter just made is a new key of the session: slide now, so it gets
-- the session's TTL at once
session.finish_write(c, false, n == 1, nil, false, rec)
return reply.ok(n)
