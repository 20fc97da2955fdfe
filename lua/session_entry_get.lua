--! prelude: session_lib
-- session_entry_get: read one Q&A entry by qa_id through the qa_id index, in
-- O(1) whatever the session's length. It writes nothing but a rebuilt index
-- when the index is stale (Cognee wrote to the list); it slides no TTL.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] qa_id
-- returns the entry, or nil when the session holds no such entry.
local pos, el = locate(ARGV[5])
if not pos then return false end
return el
