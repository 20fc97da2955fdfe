-- registry_user_state: change a user's state object by a JSON merge patch.
-- The state is agent_user_state:<tag><u> (a string in the user's slot),
-- one of the user's keys that live as long as the user's sessions
-- (session.keep: every slide of any of them gives it at least that
-- session's TTL); each write of it gives it at least SESSION_TTL_SECONDS
-- too. A user's write: no session is read or written.
-- KEYS[1] the record of any session of the user (lib/session.lua; only
--   the user's keys are touched)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the patch: a JSON object (validated by the sidecar)
-- ARGV[3] the largest state in bytes
-- emits user_state_changed (the new state) on the user's stream.
-- returns (reply.lua) {'ok', 'stored', new state}; {'ok', 'too_big'} when
--   it would exceed ARGV[3] bytes (nothing written: the sidecar answers a
--   400); {'ok', 'unreadable'} the stored state is not a JSON object
--   (another program wrote it: nothing written, 409 state_unreadable);
--   {'refused', ...} when the state or the user's event stream holds
--   another type, or the user is fenced (nothing written).
--- @include reply
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused then return refused end
refused = events.user_refused(c)
if refused then return refused end
local key = session.user_key(c, 'agent_user_state')
local old, answer = registry.read_state(key)
if answer then return answer end
local state = registry.merge_patch(old, ARGV[2])
if #state > tonumber(ARGV[3]) then return reply.ok('too_big') end
session.keep(c, key)
redis.call('SET', key, state, 'KEEPTTL')
if not old then
  session.user_made(c, key)
elseif c.default_ttl > 0 then
  -- at least SESSION_TTL_SECONDS from this write; none kept while a
  -- session without expiry holds it
  redis.call('EXPIRE', key, c.default_ttl, 'GT')
end
events.emit_user(c, 'user_state_changed', 'state', nil, state)
session.finish_user(c)
return reply.ok('stored', state)
