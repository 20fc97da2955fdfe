-- lock_release: delete the lock if the caller holds it, and wake waiters.
-- Never deletes another holder's lock (redis-py's compare-and-delete).
-- KEYS[1] = <name>           the lock
-- KEYS[2] = {<name>}:meta    the sidecar holder's metadata (deleted only if a hash)
-- ARGV[1] = token
-- ARGV[2] = Pub/Sub channel of release events
-- ARGV[3] = lock name, the message published on ARGV[2]
-- returns 1   released (waiters woken: best effort, a PUBLISH the ACL
--             refuses is skipped; waiters re-check on their own)
--         0   not held: the key does not exist
--         -1  held by another token (or the key is not a lock)
local cur = redis.pcall('GET', KEYS[1])
if cur == false then
  return 0
end
if type(cur) ~= 'string' or cur ~= ARGV[1] then
  return -1
end
redis.call('DEL', KEYS[1])
if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  redis.call('DEL', KEYS[2])
end
redis.pcall('PUBLISH', ARGV[2], ARGV[3])
return 1
