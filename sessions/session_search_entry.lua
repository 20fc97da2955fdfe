-- session_search_entry: writes one Q&A entry's search document anew after
-- its question, context or answer changed, when the entry is still the one
-- the sidecar analysed and lies in the index's covered prefix (an entry
-- past it is indexed by the catch-up that reaches it: no document exists
-- past the prefix, so a rewrite of the list can never leave one behind).
-- Not activity: the session's last activity, TTLs and events are not
-- touched (session.commit's quiet write).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] qa_id
-- ARGV[4] the SHA1 (hex) of the entry's bytes as analysed
-- ARGV[5..6] its document: spec "term tf ..." and length (its time is the
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
--- @include idindex
--- @include session
--- @include search

local c = idindex.open(session.open(KEYS, ARGV), ARGV[2])
-- a fenced user (being erased): an index behind the erasure's scan would
-- outlive it
local refused = session.begin(c)
if refused then return refused end
local found = idindex.locate_new(c, 'qa', ARGV[3])
if found.answer then return found.answer end
if not found.dup or redis.sha1hex(found.dup) ~= ARGV[4] then return reply.ok(0) end
refused = search.prepare(c, 'entries') or session.commit(c, { quiet = true })
if refused then return refused end
local n, fp = search.entries_cov(c)
if found.pos >= n or not search.cov_valid(c, n, fp) then return reply.ok(2) end
search.index_doc(c, c.edocs, ARGV[3], ARGV[5], ARGV[6], clock.entry_time_us(found.dup) or session.now(c))
session.finish(c)
return reply.ok(1)
