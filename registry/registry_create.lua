-- registry_create: create a session with its title and metadata, as
-- running; an existing session is left as it is.
-- KEYS[1..15] the session's keys, indexes and totals (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] '1' when ARGV[6] is the title, else '0' (no title)
-- ARGV[7] metadata: a flat JSON string map, or '' for none
-- ARGV[8] the Idempotency-Key, or '' for none
-- ARGV[9] the initial state: a JSON object, or '' for none (its key is
--   agent_session_state:<u>:<s>, c.state, slid by finish_write)
-- emits status {status: started} when it creates the session.
-- returns {'ok'} created; {'dup'} a repeat of ARGV[8] (the session
--   exists and was created with that key: nothing written); {'refused',
--   'session_exists', text} the session exists; {'refused',
--   'key_wrong_type', text} when a key it would write holds another type
--   (session.guard). Nothing is written when refused.
--- @include reply
--- @include meta
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
if session.exists(c) then
  if ARGV[8] ~= '' and redis.call('HGET', c.record, 'create_key') == ARGV[8] then return reply.dup() end
  return reply.refused('session_exists', 'session ' .. c.uid .. '/' .. c.sid .. ' already exists')
end
-- every check before the first write (Redis does not roll back): the
-- metadata indexes, and the state key (SET would replace a key of another
-- type)
local checks = meta.checks(c, ARGV[7])
if ARGV[9] ~= '' then checks[#checks + 1] = { c.state, 'string' } end
local refused = session.guard(c, 'keep', unpack(checks))
if refused then return refused end
local f = {}
if ARGV[5] == '1' then f[#f + 1], f[#f + 2] = 'title', ARGV[6] end
if ARGV[7] ~= '' then f[#f + 1], f[#f + 2] = 'metadata', ARGV[7] end
if ARGV[8] ~= '' then f[#f + 1], f[#f + 2] = 'create_key', ARGV[8] end
if ARGV[9] ~= '' then redis.call('SET', c.state, ARGV[9]) end
if #f > 0 then redis.call('HSET', c.record, unpack(f)) end
events.emit(c, 'status', 'state', nil, '{"status":"started"}')
session.finish_write(c, false, true)
return reply.ok()
