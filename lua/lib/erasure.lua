-- erasure: the fence of a user being erased (DELETE /v1/users/{u}, module
-- erasure, lua/user_erase.lua). The erasure's progress key
--   agent_user_erasure:<tag><sha1 of u>   (a hash; family "user erasure")
-- is named by the user's SHA1, so no key names an erased user. While it
-- exists every write of the user is refused before its first write
-- (session.guard, events.user_refused and the scripts without them call
-- fenced): one EXISTS, so the erasure's scan never misses a key written
-- behind it. c is a session context (session.open).

local PREFIX = 'agent_user_erasure'
-- SETTLE: how long the key outlives a finished erasure (s), so a write sent
-- before the erasure answered cannot bring the user back.
local SETTLE = 30

-- key is the user's progress key.
local function key(c)
  return PREFIX .. ':' .. c.tag .. redis.sha1hex(c.uid)
end

-- fenced is the refusal of a write of a user being erased, else nil.
local function fenced(c)
  if redis.call('EXISTS', key(c)) == 0 then return nil end
  return { 'refused', 'user_erasing', 'user ' .. c.uid .. ' is being erased (DELETE /v1/users/' .. c.uid
    .. '); nothing was written: its writes are refused until the erasure is done and ' .. SETTLE .. ' s after' }
end

return {
  SETTLE = SETTLE,
  key = key,
  fenced = fenced,
}
