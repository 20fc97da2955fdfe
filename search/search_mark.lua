-- search_mark: the user's relevance index marker under SEARCH_INDEX=
-- on-demand: the field search of the user's marker, which makes the
-- user's writes index (search.wanted), and the build's cursor, field build
-- of the user's agent_search_stats hash (c.sstats). A relevance search opens
-- it (made with a build cursor when absent); the build moves the cursor, a
-- step at a time, newest sessions first, and sets it to '' when every
-- session is indexed. Both live as long as the user's sessions (the
-- marker keeps agent_search_stats: session.keep).
-- KEYS[1] the record of a session of the user (lib/session.lua; only the
--   user's keys are touched)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] 'open', or 'cursor' with ARGV[3] the build's cursor ('' = built)
-- returns (reply.lua) {'ok', cursor, made}: the build cursor ('' when
--   built; '+inf' when nothing is indexed yet), made 1 when this call made
--   the marker; {'refused', ...} when a key holds another type, or the
--   user is fenced (being erased).
--- @include reply
--- @include guard
--- @include marker
--- @include session

local c = session.open(KEYS, ARGV)
-- a fenced user (being erased) gets no index key back behind the erasure
local refused = session.begin(c)
if refused then return refused end
local stats = session.user_key(c, 'agent_search_stats')
local fields
fields, refused = guard.read('HLEN', stats, 'hash')
if refused then return refused end
if ARGV[2] == 'cursor' and not c.marks.search then return reply.ok('', 0) end
session.keep(c, stats)
-- a hash this call makes (anew: another program removed it, or it ended
-- before the marker) gets its TTL: no slide's EXPIRE GT gives one to a
-- key without
if fields == 0 then session.user_made(c, stats) end
if ARGV[2] == 'cursor' then
  redis.call('HSET', stats, 'build', ARGV[3])
  session.finish_user(c)
  return reply.ok(ARGV[3], 0)
end
local made = 0
if not c.marks.search then
  made = 1
  marker.note(c)
  redis.call('HSET', c.marker, 'search', '1')
end
if redis.call('HEXISTS', stats, 'build') == 0 then redis.call('HSET', stats, 'build', '+inf') end
session.finish_user(c)
return reply.ok(redis.call('HGET', stats, 'build') or '', made)
