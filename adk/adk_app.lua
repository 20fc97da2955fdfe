-- adk_app: apply the `app:` part of an ADK state delta to the app's state
-- (module adk) on Redis Cluster, where that key lives in the app's own slot,
-- not the user's: run after adk_append.lua stored the event, so it is not
-- atomic with it (on standalone Redis adk_append.lua writes it itself). Not
-- a session script: no record, no marker.
-- KEYS[1] adk_app_state:<tag><app> (hash, adk.lua)
-- ARGV[1] ADK_MAX_STATE_BYTES
-- ARGV[2] TTL it keeps at least (s; 0 none)
-- ARGV[3] keys it holds at most (adk.MaxStateKeys)
-- ARGV[4..] the delta's pairs: key (without `app:`), value (JSON text)
-- returns (reply.lua) {'ok'}; {'refused', 'state_too_big', text};
--   {'refused', 'key_wrong_type', text}: nothing written.
--- @include reply
--- @include adk

local key = KEYS[1]
local kv = { unpack(ARGV, 4) }
if #kv == 0 then return reply.ok() end
local sz, refused = adk.size(key, kv)
refused = refused or adk.too_big('a', sz, tonumber(ARGV[1]), tonumber(ARGV[3]))
if refused then return refused end
adk.apply(key, kv, sz)
adk.expire_app(key, tonumber(ARGV[2]), sz.fresh)
return reply.ok()
