-- session_entry_get: read one Q&A entry by qa_id through the qa_id index, in
-- O(1) whatever the session's length. It writes nothing but a step of the
-- index when the index does not cover the list (Cognee wrote to it); it
-- slides no TTL.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] qa_id
-- returns (reply.lua) {'ok', entry}; {'missing'} when the session holds no
--   such entry; {'index_build', 'qa'} when telling needs more index steps
--   (session_index_build); {'refused', ...}.
--- @include reply
--- @include idindex
--- @include session

local c = session.open(KEYS, ARGV)
local pos, el = idindex.locate(c, 'qa', ARGV[5])
if type(pos) == 'table' then return pos end
if not pos then return reply.missing() end
return reply.ok(el)
