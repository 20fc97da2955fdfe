-- adk_list: the user's ADK sessions of an app (module adk), in creation
-- order, each with its last update time; members whose session has gone
-- (expired, deleted) are dropped from the list, and from the app's index
-- across users, as they are met. At most ADK_MAX_SESSIONS members: the
-- list never holds more. No session is written (no fence: it only drops
-- members of sessions gone).
-- KEYS[1] the record of a session of the user (lib/session.lua; only its
--   user and tag are used)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] app name
-- ARGV[3] ADK_MAX_SESSIONS
-- returns (reply.lua) {'ok', session_id, last_update, ...}; {'refused',
--   'key_wrong_type', text} the list (or, when it drops a member, the
--   app's index) holds another type.
--- @include reply
--- @include guard
--- @include session
--- @include adk

local c = session.open(KEYS, ARGV)
local app = ARGV[2]
local k = adk.keys(c, app, '')
local ids, refused = guard.read('ZRANGE', k.index, 'zset', 0, tonumber(ARGV[3]) - 1)
if refused then return refused end
local out, dead = { 'ok' }, {}
for _, sid in ipairs(ids) do
  local r = redis.pcall('HMGET', adk.record(c, app, c.uid, sid), 'app', 'last_update')
  if not r.err then
    if r[1] ~= app then
      dead[#dead + 1] = sid
    else
      out[#out + 1] = sid
      out[#out + 1] = r[2] or '0'
    end
  end
end
if #dead > 0 then
  refused = adk.check_apps(k)
  if refused then return refused end
  for _, sid in ipairs(dead) do
    redis.call('ZREM', k.index, sid)
    adk.unlist(k.apps, sid .. ' ' .. c.uid)
  end
end
return out
