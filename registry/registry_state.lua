-- registry_state: change a session's state object (agent_session_state:
-- <u>:<s>, c.state, one of the session's own keys: session.lua) by a JSON
-- merge patch. Counts as activity.
-- KEYS[1..15] the session's keys, indexes and totals (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] the patch: a JSON object (validated by the sidecar)
-- ARGV[6] the largest state in bytes
-- emits state_changed (the new state).
-- returns {'ok', 'stored', new state, started} (started: 1 when this
--   started the session's record, for a session only Cognee wrote, else
--   0); {'ok', 'too_big'} the state would exceed ARGV[6] bytes (nothing
--   written: the sidecar answers a 400); {'ok', 'unreadable'} the stored
--   state is not a JSON object (another program wrote it: nothing written,
--   409 state_unreadable); {'missing'} no such session
--   (nothing created); {'refused', 'key_wrong_type', text} when a key it
--   would write holds another type (session.guard; nothing written).
--- @include reply
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
if not session.exists(c) then return reply.missing() end
local old = redis.call('GET', c.state)
if old and not registry.readable(old) then return reply.ok('unreadable') end
local state = registry.merge_patch(old or nil, ARGV[5])
if #state > tonumber(ARGV[6]) then return reply.ok('too_big') end
-- every check before the first write (Redis does not roll back)
local refused = session.guard(c, 'keep')
if refused then return refused end
redis.call('SET', c.state, state, 'KEEPTTL')
events.emit(c, 'state_changed', 'state', nil, state)
-- a new key gets the session's TTL at once
local _, started = session.finish_write(c, false, not old)
return reply.ok('stored', state, started and 1 or 0)
