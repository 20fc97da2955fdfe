-- registry_user_state: change a user's state object by a JSON merge patch.
-- The key, agent_user_state:<tag><u> (a string, c.user_state), is derived
-- like the metadata indexes, in the user's slot; each write of it gives it
-- at least SESSION_TTL_SECONDS, and every write of the user's sessions
-- extends it to that session's TTL (session.lua, finish_write).
-- KEYS[1..15] the keys of any session of the user (session.lua); only
--   their tag is used, nothing of that session is read or written
-- ARGV[1..4] TTL, max entries, user_id, that session_id (session.lua)
-- ARGV[5] the patch: a JSON object (validated by the sidecar)
-- ARGV[6] the largest state in bytes
-- emits user_state_changed (the new state) on the user's stream.
-- returns {'ok', 'stored', new state}; {'ok', 'too_big'} when it would
--   exceed ARGV[6] bytes (nothing written: the sidecar answers a 400);
--   {'ok', 'unreadable'} the stored state is not a JSON object (another
--   program wrote it: nothing written, 409 state_unreadable);
--   {'refused', 'key_wrong_type', text} when the user's event stream holds
--   another type (events.user_refused; nothing written).
--- @include reply
--- @include meta
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local refused = events.user_refused(c)
if refused then return refused end
local key = c.user_state
local old = redis.call('GET', key)
if old and not registry.readable(old) then return reply.ok('unreadable') end
local state = registry.merge_patch(old or nil, ARGV[5])
if #state > tonumber(ARGV[6]) then return reply.ok('too_big') end
local p = redis.call('PTTL', key)
redis.call('SET', key, state, 'KEEPTTL')
meta.expire(key, c.default_ttl, p)
events.emit_user(c, 'user_state_changed', 'state', nil, state)
return reply.ok('stored', state)
