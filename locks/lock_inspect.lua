-- lock_inspect: one consistent read of a lock (holder, ttl, fence).
-- KEYS[1] = <name>           the lock
-- KEYS[2] = {<name>}:meta    the sidecar holder's metadata
-- ARGV: none
-- returns {0}                                     free
--         {1, pttl, owner or false, fence or false}   held (owner and fence only for
--         a sidecar holder; pttl -1 = no expiry)
--- @include lockholder
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
return lockholder.held(1, KEYS[1], KEYS[2])
