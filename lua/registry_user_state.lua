--! prelude: registry_lib
-- registry_user_state: change a user's state object by a JSON merge patch.
-- The key, agent_user_state:<tag><u> (a string), is derived like the
-- metadata indexes, in the user's slot; each write of it gives it at least
-- SESSION_TTL_SECONDS, and every write of the user's sessions extends it to
-- that session's TTL (session_lib.lua, finish_write).
-- KEYS[1..15] the keys of any session of the user (session_lib.lua); only
--   their tag is used, nothing of that session is read or written
-- ARGV[1..4] TTL, max entries, user_id, that session_id (session_lib.lua)
-- ARGV[5] the patch: a JSON object (validated by the sidecar)
-- ARGV[6] the largest state in bytes
-- returns the new state, or -1 when it would exceed ARGV[6] bytes (nothing
--   written).
local key = K_USER_STATE
local state = merge_patch(redis.call('GET', key) or nil, ARGV[5])
if #state > tonumber(ARGV[6]) then return -1 end
local p = redis.call('PTTL', key)
redis.call('SET', key, state, 'KEEPTTL')
meta_expire(key, DEFAULT_TTL, p)
return state
