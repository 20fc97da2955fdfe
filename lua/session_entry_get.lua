--! prelude: session_lib
-- session_entry_get: read one Q&A entry by qa_id through the qa_id index, in
-- O(1) whatever the session's length. It writes nothing but a rebuilt index
-- when the index is stale (Cognee wrote to the list); it slides no TTL.
-- KEYS[1..5] the session's keys (session_lib.lua)
-- ARGV[1..2] TTL and max entries (session_lib.lua)
-- ARGV[3] qa_id
-- returns the entry, or nil when the session holds no such entry.
local pos, el = locate(ARGV[3])
if not pos then return false end
return el
