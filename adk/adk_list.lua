-- adk_list: the user's ADK sessions of an app (module adk), in creation
-- order, each with its last update time; members whose session has gone
-- (expired, deleted) are dropped from the list, and from the app's index
-- across users, as they are met. At most ADK_MAX_SESSIONS members: the
-- list never holds more.
-- KEYS[1..15] the keys of any session of the user (session.lua); only
--   their tag is used
-- ARGV[1..4] TTL, max entries, user_id, that session_id (session.lua)
-- ARGV[5] app name
-- ARGV[6] ADK_MAX_SESSIONS
-- returns {'ok', session_id, last_update, ...}; {'refused',
--   'key_wrong_type', text} the list holds another type.
--- @include reply
--- @include guard
--- @include session
--- @include adk

local c = session.open(KEYS, ARGV)
local app = ARGV[5]
local k = adk.keys(c, app, '')
local checks = { { k.index, 'zset' } }
for _, o in ipairs(adk.ORDERS) do checks[#checks + 1] = { k.apps[o], 'zset' } end
local refused = guard.check(checks)
if refused then return refused end
local out = { 'ok' }
for _, sid in ipairs(redis.call('ZRANGE', k.index, 0, tonumber(ARGV[6]) - 1)) do
  local r = redis.pcall('HMGET', adk.record(c, app, c.uid, sid), 'app', 'last_update')
  if r.err or r[1] ~= app then
    if not r.err then
      redis.call('ZREM', k.index, sid)
      adk.unlist(k.apps, sid .. ' ' .. c.uid)
    end
  else
    out[#out + 1] = sid
    out[#out + 1] = r[2] or '0'
  end
end
return out
