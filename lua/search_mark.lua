-- search_mark: the user's relevance index marker under SEARCH_INDEX=
-- on-demand: the user's search statistics hash (c.sstats), whose existence
-- makes the user's writes index (search.wanted). A relevance search opens
-- it (made with a build cursor when absent, else its TTL slid to at
-- least the session TTL); the build moves the cursor, a step at a time,
-- newest sessions first, and sets it to '' when every session is indexed
-- (the field stays: a hash without fields is no key, and then no marker).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua; the
--   session is any of the user's: only the user's keys are touched)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] 'open', or 'cursor' with ARGV[6] the build's cursor ('' = built)
-- returns (reply.lua) {'ok', cursor, made}: the build cursor ('' when
--   built; '+inf' when nothing is indexed yet), made 1 when this call made
--   the marker; {'refused', ...} when the key holds another type, or the user is
--   being erased (user_erasing).
--- @include reply
--- @include guard
--- @include erasure
--- @include session

local c = session.open(KEYS, ARGV)
-- a user being erased gets no index key back behind the erasure's scan
local refused = erasure.fenced(c) or guard.check({ { c.sstats, 'hash' } })
if refused then return refused end
local ttl = c.default_ttl
if ARGV[5] == 'cursor' then
  if redis.call('EXISTS', c.sstats) == 0 then return reply.ok('', 0) end
  -- '' (built) is kept as a field: the marker is the hash's existence
  redis.call('HSET', c.sstats, 'build', ARGV[6])
  return reply.ok(ARGV[6], 0)
end
local made = 0
if redis.call('EXISTS', c.sstats) == 0 then
  -- none yet: the build takes every session in, newest first
  made = 1
  redis.call('HSET', c.sstats, 'build', '+inf')
end
-- at least the TTL: the writes of a longer-lived session (or of one
-- without expiry) gave it more, and it must outlive their index
local p = redis.call('PTTL', c.sstats)
if ttl > 0 and (made == 1 or (p >= 0 and p < ttl * 1000)) then redis.call('EXPIRE', c.sstats, ttl) end
return reply.ok(redis.call('HGET', c.sstats, 'build') or '', made)
