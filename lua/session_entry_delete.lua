--! prelude: session_lib
-- session_entry_delete: remove one Q&A entry by qa_id.
-- KEYS[1..5] the session's keys (session_lib.lua)
-- ARGV[1..2] TTL and max entries (session_lib.lua)
-- ARGV[3] qa_id
-- returns 1 when removed, 0 when the session holds no such entry (nothing
--   is written then).
local pos = locate(ARGV[3])
if not pos then return 0 end
remove_at(K_ENTRIES, pos)
rebuild_index() -- later entries moved up by one
finish_write()
return 1
