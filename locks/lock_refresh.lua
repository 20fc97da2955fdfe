-- lock_refresh: extend the lock if the caller still holds it.
-- KEYS[1] = <name>           the lock
-- KEYS[2] = {<name>}:meta    the sidecar holder's token, owner, fence, ttl (left
--                            alone, as if absent, when it is not a hash)
-- ARGV[1] = token
-- ARGV[2] = new ttl in milliseconds, or 0 for the ttl it was acquired with
-- ARGV[3] = ttl to use when 0 was asked and the holder left none (a redis-py holder)
-- returns {1, ttl_ms, now_ms, owner or false, fence or false}   refreshed
--         {0}                                                  not held by token (free, another holder, or not a lock)
local cur = redis.pcall('GET', KEYS[1])
if type(cur) ~= 'string' or cur ~= ARGV[1] then
  return {0}
end
-- pcall: a meta key of another type is left alone, as if absent (meta[1] nil)
local meta = redis.pcall('HMGET', KEYS[2], 'token', 'owner', 'fence', 'ttl')
local mine = meta[1] == ARGV[1]
local ttl = ARGV[2]
if ttl == '0' then
  if mine and meta[4] then ttl = meta[4] else ttl = ARGV[3] end
end
redis.call('PEXPIRE', KEYS[1], ttl)
if mine then
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  meta = {false, false, false}
end
local t = redis.call('TIME')
return {1, tonumber(ttl), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), meta[2], tonumber(meta[3])}
