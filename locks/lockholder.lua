-- lockholder: a held lock as the lock scripts answer it.

-- held is {flag, pttl, owner or false, fence or false} of the held lock
-- at key lock: its pttl (-1 = no expiry), and the owner and fence of the
-- metadata at meta_key when they are those of the holder whose token the
-- lock holds (a sidecar caller); false and false for any other holder.
local function held(flag, lock, meta_key)
  local pttl = redis.call('PTTL', lock)
  local cur = redis.pcall('GET', lock)
  -- pcall: a meta key of another type (an error table, meta[1] nil) is no holder's
  local meta = redis.pcall('HMGET', meta_key, 'token', 'owner', 'fence')
  if type(cur) == 'string' and meta[1] == cur then
    return {flag, pttl, meta[2], tonumber(meta[3])}
  end
  return {flag, pttl, false, false}
end

return { held = held }
