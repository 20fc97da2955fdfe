--! prelude: session_lib
-- session_context_delete: remove the session-context entry whose "id" matches.
-- KEYS[1..5] the session's keys (session_lib.lua)
-- ARGV[1..2] TTL and max entries (session_lib.lua)
-- ARGV[3] the entry's id
-- returns 1 when removed, 0 when there is no such entry.
local pos = find_by_id(K_CONTEXT, 'id', ARGV[3])
if not pos then return 0 end
remove_at(K_CONTEXT, pos)
finish_write()
return 1
