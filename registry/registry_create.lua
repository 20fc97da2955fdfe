-- registry_create: create a session with its title and metadata, as
-- running; an existing session is left as it is.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] '1' when ARGV[3] is the title, else '0' (no title)
-- ARGV[4] metadata: a flat JSON string map, or '' for none (the session
--   joins the metadata indexes of its pairs: registry.lua)
-- ARGV[5] the Idempotency-Key, or '' for none (record field create_key)
-- ARGV[6] the initial state: a JSON object, or '' for none (its key is
--   agent_session_state:<tag><u>:<s>, a family of the session)
-- emits status {status: started} when it creates the session.
-- returns (reply.lua) {'ok'} created; {'dup'} a repeat of ARGV[5] (the
--   session exists and was created with that key: nothing written);
--   {'refused', 'session_exists', text} the session exists; {'refused',
--   'key_wrong_type', text} when a key it would write holds another type
--   (the state key, a metadata index, a lifecycle index); {'refused', ...}
--   when the user is fenced. Nothing is written when refused.
--- @include reply
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local refused = session.begin(c, { 'create_key' })
if refused then return refused end
if session.exists(c) then
  if ARGV[5] ~= '' and c.rec.create_key == ARGV[5] then return reply.dup() end
  return reply.refused('session_exists', 'session ' .. c.uid .. '/' .. c.sid .. ' already exists')
end
registry.index_pairs(c, registry.pairs_of(ARGV[4]))
local state = nil
if ARGV[6] ~= '' then state = session.use(c, registry.STATE, 'string') end
events.use(c)
refused = session.commit(c)
if refused then return refused end
if state then redis.call('SET', state, ARGV[6]) end
events.emit(c, 'status', 'state', nil, '{"status":"started"}')
local f = {}
if ARGV[2] == '1' then f[#f + 1], f[#f + 2] = 'title', ARGV[3] end
if ARGV[4] ~= '' then f[#f + 1], f[#f + 2] = 'metadata', ARGV[4] end
if ARGV[5] ~= '' then f[#f + 1], f[#f + 2] = 'create_key', ARGV[5] end
session.finish(c, f)
return reply.ok()
