-- adk_app: apply the `app:` part of an ADK state delta to the app's state
-- (module adk) on Redis Cluster, where that key lives in the app's own slot,
-- not the user's: run after adk_append.lua stored the event, so it is not
-- atomic with it (on standalone Redis adk_append.lua writes it itself).
-- KEYS[1] adk_app_state:<tag><app> (hash, lib/adk.lua)
-- ARGV[1] ADK_MAX_STATE_BYTES
-- ARGV[2] TTL it keeps at least (s; 0 none)
-- ARGV[3..] the delta's pairs: key (without `app:`), value (JSON text)
-- returns {'ok'}; {'refused', 'state_too_big', text};
--   {'refused', 'key_wrong_type', text}: nothing written.
--- @include reply
--- @include guard
--- @include meta

local key = KEYS[1]
local refused = guard.check({ { key, 'hash' } })
if refused then return refused end
local p = redis.call('PTTL', key) -- before the write: meta.expire tells a new key by -2
local total = tonumber(redis.call('HGET', key, '#') or '0') or 0
local args = {}
for i = 3, #ARGV - 1, 2 do
  local f = '=' .. ARGV[i]
  local old = redis.call('HSTRLEN', key, f)
  if old > 0 then total = total - old - #f end
  total = total + #f + #ARGV[i + 1]
  args[#args + 1] = f
  args[#args + 1] = ARGV[i + 1]
end
if total > tonumber(ARGV[1]) then
  return reply.refused('state_too_big', 'the app state would be ' .. total .. ' bytes; at most ' .. ARGV[1]
    .. ' (ADK_MAX_STATE_BYTES); nothing was changed')
end
if #args > 0 then
  redis.call('HSET', key, '#', tostring(total), unpack(args))
  meta.expire(key, tonumber(ARGV[2]), p)
end
return reply.ok()
