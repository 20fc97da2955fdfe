-- session_entry_get: read one Q&A entry by qa_id through the qa_id index, in
-- O(1) whatever the session's length. It writes nothing but a step of the
-- index when the index does not cover the list (Cognee wrote to it); it
-- slides no TTL.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] qa_id
-- returns (reply.lua) {'ok', entry}; {'missing'} when the session holds no
--   such entry; {'index_build', 'qa'} when telling needs more index steps
--   (session_index_build); {'refused', ...}.
--- @include reply
--- @include idindex
--- @include session

local c = idindex.open(session.open(KEYS, ARGV), ARGV[2])
-- exact: the list's length too, so that an index a rewrite (Cognee's
-- delete) left covering a longer list is made again, not trusted
local found = idindex.locate_new(c, 'qa', ARGV[3], true)
if found.answer then return found.answer end
if not found.dup then return reply.missing() end
return reply.ok(found.dup)
