-- lock_acquire: take the lock if free, redis-py's form (SET name token NX PX).
-- KEYS[1] = <name>           the lock: a string holding the holder's token
-- KEYS[2] = {<name>}:fence   the last fencing token granted (same slot as KEYS[1]),
--                            expiring ARGV[4] ms after the last grant
-- KEYS[3] = {<name>}:meta    hash token, owner, fence, ttl of the sidecar holder, same PX as KEYS[1]
-- ARGV[1] = token (random, 128 bits as 32 hex characters)
-- ARGV[2] = ttl in milliseconds (relative: expiry never comes from the caller's clock)
-- ARGV[3] = owner (free text, may be empty)
-- ARGV[4] = fence ttl in milliseconds
-- returns {1, fence, now_ms}                 acquired; now_ms is Redis TIME
--         {0, pttl, owner or false, fence or false}   held by someone else
--         (owner and fence only when a sidecar caller holds it; pttl -1 = no expiry)
--         {-1, key, type}                    the lock is free but its companion key
--         holds something else (type; 'string' for a non-number): nothing was written
--
-- The fencing token is max(last + 1, Redis TIME in µs): while the fence key
-- lives it is last + 1 or more; once it has expired (ARGV[4] ms after the last
-- grant, by the same Redis clock) TIME has passed every token granted before.
-- Numbers stay below 2^53, so Lua's doubles hold them exactly.
--- @include lockholder
-- TIME is read before the writes: effects replication (the default since
-- Redis 5; asked for explicitly on older servers) replicates the writes, not the script.
if redis.replicate_commands then redis.replicate_commands() end
if not tonumber(ARGV[2]) or not tonumber(ARGV[4]) then
  return redis.error_reply('ERR lock_acquire: ARGV[2] and ARGV[4] must be TTLs in ms')
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  local last = 0
  local ftype = redis.call('TYPE', KEYS[2])['ok']
  if ftype == 'string' then
    last = tonumber(redis.call('GET', KEYS[2]))
    if not last or last ~= last or last < 0 or last >= 9007199254740991 then
      return {-1, KEYS[2], 'string'}
    end
  elseif ftype ~= 'none' then
    return {-1, KEYS[2], ftype}
  end
  local mtype = redis.call('TYPE', KEYS[3])['ok']
  if mtype ~= 'none' and mtype ~= 'hash' then
    return {-1, KEYS[3], mtype}
  end
  local t = redis.call('TIME')
  local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local fence = string.format('%.0f', math.max(math.floor(last) + 1, now_us))
  redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
  redis.call('SET', KEYS[2], fence, 'PX', ARGV[4])
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'token', ARGV[1], 'owner', ARGV[3], 'fence', fence, 'ttl', ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return {1, tonumber(fence), math.floor(now_us / 1000)}
end
return lockholder.held(0, KEYS[1], KEYS[3])
