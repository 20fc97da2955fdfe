-- session_entry_get: read one Q&A entry by qa_id through the qa_id index, in
-- O(1) whatever the session's length. It writes nothing but a step of the
-- index when the index does not cover the list (Cognee wrote to it); it
-- slides no TTL.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] qa_id
-- returns the entry; nil when the session holds no such entry;
--   {'index_build', 'qa'} when telling needs more index steps
--   (session_index_build).
--- @include idindex
--- @include session

local c = session.open(KEYS, ARGV)
local pos, el = idindex.locate(c, 'qa', ARGV[5])
if type(pos) == 'table' then return pos end
if not pos then return false end
return el
