-- adk_app: apply the `app:` part of an ADK state delta to the app's state
-- (module adk) on Redis Cluster, where that key lives in the app's own slot,
-- not the user's: run after adk_append.lua stored the event, so it is not
-- atomic with it (on standalone Redis adk_append.lua writes it itself).
-- KEYS[1] adk_app_state:<tag><app> (hash, lib/adk.lua)
-- ARGV[1] ADK_MAX_STATE_BYTES
-- ARGV[2] TTL it keeps at least (s; 0 none)
-- ARGV[3] keys it holds at most (adk.MaxStateKeys)
-- ARGV[4..] the delta's pairs: key (without `app:`), value (JSON text)
-- returns {'ok'}; {'refused', 'state_too_big', text};
--   {'refused', 'key_wrong_type', text}: nothing written.
--- @include reply
--- @include guard
--- @include meta
--- @include adk

local key = KEYS[1]
local refused = guard.check({ { key, 'hash' } })
if refused then return refused end
local p = redis.call('PTTL', key) -- before the write: meta.expire tells a new key by -2
local kv = { unpack(ARGV, 4) }
local total, n = adk.size(key, kv)
refused = adk.too_big('a', total, n, tonumber(ARGV[1]), tonumber(ARGV[3]))
if refused then return refused end
if #kv > 0 then
  adk.apply(key, kv, total)
  meta.expire(key, tonumber(ARGV[2]), p)
end
return reply.ok()
