-- hello_session: counts one more greeting in a session, in the module's own
-- session key (hello.SessionFamily), and in the user's key of its user
-- family (hello.UserFamily), with the session's bookkeeping: the record,
-- the TTLs of every key of the session (this one among them: its family
-- is registered as a session family) and of the user's keys that live as
-- long as the user's sessions (the user's counter: session.keep), and the
-- session's live event.
-- KEYS[1] the session's record, KEYS[2] the user's marker (lua/lib/session.lua)
-- ARGV[1] the core's settings (lua/lib/session.lua)
-- ARGV[2] the session family's prefix, sidecar_hello_session
-- ARGV[3] the user family's prefix, sidecar_hello_user
-- emits x-hello {"count": n}.
-- returns (lua/lib/reply.lua) {'ok', n, u}: the session's count and the
--   user's after this call; {'refused', 'key_wrong_type', ...} when a key
--   it writes holds another type, before anything is written.
--- @include reply
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)                      -- no command
local refused = session.begin(c)                        -- the record, the user's marker
if refused then return refused end
local key = session.use(c, ARGV[2], 'string')           -- <prefix>:<tag><u>:<s>
local ukey = session.keep(c, session.user_key(c, ARGV[3]), 'string') -- <prefix>:<tag><u>
events.use(c)
refused = session.commit(c)                             -- type checks, then the first writes
if refused then return refused end
local n = redis.call('INCR', key)
if n == 1 then session.made(c, ARGV[2]) end             -- made anew: it gets the TTL
local u = redis.call('INCR', ukey)
if u == 1 then session.user_made(c, ukey) end
events.emit(c, 'x-hello', 'custom', nil, '{"count":' .. string.format('%d', n) .. '}')
session.finish(c)                                       -- the record's HSET and the TTLs
return session.reply(c, reply.ok(n, u))
