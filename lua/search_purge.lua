-- search_purge: one bounded step of removing the postings and documents of
-- the user's purge keys (a deleted session's, or a cleared kind's,
-- documents: search.unindex_all), about ARGV[5] commands (at most 1 024).
-- Not activity: nothing but the search keys is touched.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua; the
--   session is any of the user's: only the user's keys are touched)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the commands to spend at most (a ZREM a term, an HDEL a document)
-- returns (reply.lua) {'ok', more}: more 1 when purge keys are left;
--   {'refused', ...} when the statistics key holds another type, or
--   the user is being erased (user_erasing).
--- @include reply
--- @include guard
--- @include erasure
--- @include session
--- @include search

local c = session.open(KEYS, ARGV)
-- a user being erased gets no index key back behind the erasure's scan
local refused = erasure.fenced(c) or guard.check({ { c.sstats, 'hash' } })
if refused then return refused end
local budget = math.max(1, math.min(1024, tonumber(ARGV[5]) or 256))
return reply.ok(search.purge_step(c, budget) and 1 or 0)
