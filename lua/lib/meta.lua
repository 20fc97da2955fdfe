-- meta: what is left of the metadata indexes' old library, for the stock
-- scripts not yet on the lean session core: the index names (user_erase)
-- and the old TTL rule (adk). The registry's scripts keep the indexes
-- with the core (session.index_in; registry/registry.lua): delete this
-- library once user_erase and the adk scripts no longer include it.
-- Names follow the record key's tag (redisstore/keys_registry.go):
--   agent_session_meta:<tag><u>:<key>=<value>
--   agent_session_meta_global:<tag><key>=<value>

-- names returns the user's and the bucket's index of pair k=v.
local function names(c, k, v)
  return 'agent_session_meta:' .. c.tag .. c.uid .. ':' .. k .. '=' .. v,
    'agent_session_meta_global:' .. c.tag .. k .. '=' .. v
end

-- expire gives key at least ttl seconds to live (0 = persist). p is the
-- key's PTTL before this write added to it (-2: the write created it). A
-- key without expiry keeps none: a session without expiry holds it.
local function expire(key, ttl, p)
  if ttl == 0 then
    redis.call('PERSIST', key)
  elseif p == -2 or (p >= 0 and p < ttl * 1000) then
    redis.call('EXPIRE', key, ttl)
  end
end

return {
  names = names,
  expire = expire,
}
