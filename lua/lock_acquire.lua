-- lock_acquire: take the lock if free, redis-py's form (SET name token NX PX).
-- KEYS[1] = <name>           the lock: a string holding the holder's token
-- KEYS[2] = {<name>}:fence   fencing counter, never expires (same slot as KEYS[1])
-- KEYS[3] = {<name>}:meta    hash token, owner, fence, ttl of the sidecar holder, same PX as KEYS[1]
-- ARGV[1] = token (random, 128 bits as 32 hex characters)
-- ARGV[2] = ttl in milliseconds (relative: expiry never comes from the caller's clock)
-- ARGV[3] = owner (free text, may be empty)
-- returns {1, fence, now_ms}                 acquired; now_ms is Redis TIME
--         {0, pttl, owner or false, fence or false}   held by someone else
--         (owner and fence only when a sidecar caller holds it; pttl -1 = no expiry)
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = redis.call('INCR', KEYS[2])
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'token', ARGV[1], 'owner', ARGV[3], 'fence', fence, 'ttl', ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  local t = redis.call('TIME')
  return {1, fence, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
end
local pttl = redis.call('PTTL', KEYS[1])
local cur = redis.pcall('GET', KEYS[1])
local meta = redis.call('HMGET', KEYS[3], 'token', 'owner', 'fence')
if type(cur) == 'string' and meta[1] == cur then
  return {0, pttl, meta[2], tonumber(meta[3])}
end
return {0, pttl, false, false}
