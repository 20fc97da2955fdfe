-- lock_inspect: one consistent read of a lock (holder, ttl, fence).
-- KEYS[1] = <name>           the lock
-- KEYS[2] = {<name>}:meta    the sidecar holder's metadata
-- ARGV: none
-- returns {0}                                     free
--         {1, pttl, owner or false, fence or false}   held (owner and fence only for
--         a sidecar holder; pttl -1 = no expiry)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
local pttl = redis.call('PTTL', KEYS[1])
local cur = redis.pcall('GET', KEYS[1])
-- pcall: a meta key of another type (an error table, meta[1] nil) is no holder's
local meta = redis.pcall('HMGET', KEYS[2], 'token', 'owner', 'fence')
if type(cur) == 'string' and meta[1] == cur then
  return {1, pttl, meta[2], tonumber(meta[3])}
end
return {1, pttl, false, false}
