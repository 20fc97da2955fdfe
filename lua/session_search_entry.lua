-- session_search_entry: writes one Q&A entry's search document anew after
-- its question, context or answer changed, when the entry is still the one
-- the sidecar analysed and lies in the index's covered prefix (an entry
-- past it is indexed by the catch-up that reaches it: no document exists
-- past the prefix, so a rewrite of the list can never leave one behind).
-- Not activity: the record, the session's TTLs and its events are not
-- touched.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] qa_id
-- ARGV[6] the SHA1 (hex) of the entry's bytes as analysed
-- ARGV[7..8] its document: spec "term tf ..." and length (its time is the
--   entry's "time")
-- returns (reply.lua) {'ok', 1} when indexed; {'ok', 0} when the session
--   no longer holds that entry as analysed (changed or gone since: nothing
--   written; read it again); {'ok', 2} when it lies past the covered prefix
--   (nothing written); {'index_build', 'qa'} when finding it needs more
--   index steps (nothing written but one step: run session_index_build,
--   then this again); {'refused', ...} when the user is being erased or a
--   key holds another type (nothing written).
--- @include reply
--- @include clock
--- @include guard
--- @include erasure
--- @include idindex
--- @include search
--- @include session

local c = session.open(KEYS, ARGV)
local refused = erasure.fenced(c) -- an index behind the erasure's scan would outlive it
  or guard.check({ { c.entries, 'list' }, { c.qa_index, 'hash' }, { c.edocs, 'hash' }, { c.slist, 'zset' } })
if refused then return refused end
local pos, el = idindex.locate(c, 'qa', ARGV[5])
if type(pos) == 'table' then return pos end
if not pos or redis.sha1hex(el) ~= ARGV[6] then return reply.ok(0) end
local n, fp = search.entries_cov(c)
if pos >= n or not search.cov_valid(c, n, fp) then return reply.ok(2) end
search.index_doc(c, c.edocs, ARGV[5], ARGV[7], ARGV[8], clock.entry_time_us(el) or clock.now_us())
return reply.ok(1)
