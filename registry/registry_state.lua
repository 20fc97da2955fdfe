-- registry_state: change a session's state object by a JSON merge patch.
-- The state is agent_session_state:<tag><u>:<s> (a string, a family of the
-- session: slid, persisted and deleted with its other keys). Counts as
-- activity.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the patch: a JSON object (validated by the sidecar)
-- ARGV[3] the largest state in bytes
-- emits state_changed (the new state).
-- returns (reply.lua) {'ok', 'stored', new state, started} (started: 1
--   when this started the session's record, for a session only Cognee
--   wrote, else 0); {'ok', 'too_big'} the state would exceed ARGV[3] bytes
--   (nothing written: the sidecar answers a 400); {'ok', 'unreadable'} the
--   stored state is not a JSON object (another program wrote it: nothing
--   written, 409 state_unreadable); {'missing'} no such session (nothing
--   created); {'refused', ...} when a key it would write holds another
--   type, or the user is fenced (nothing written).
--- @include reply
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local key = session.key(c, registry.STATE)
local old, answer = registry.read_state(key)
if answer then return answer end
local state = registry.merge_patch(old, ARGV[2])
if #state > tonumber(ARGV[3]) then return reply.ok('too_big') end
-- the GET above refused another type: no check left for commit
session.use(c, registry.STATE, 'string', true)
events.use(c)
refused = session.commit(c)
if refused then return refused end
redis.call('SET', key, state, 'KEEPTTL')
-- a state another program removed gets the session's TTL again
if not old then session.made(c, registry.STATE) end
events.emit(c, 'state_changed', 'state', nil, state)
local started = session.finish(c)
return session.reply(c, reply.ok('stored', state, started and 1 or 0))
