--! prelude: session_lib
-- session_entry_delete: remove one Q&A entry by qa_id.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] qa_id
-- emits entry_deleted {qa_id}.
-- returns 1 when removed, 0 when the session holds no such entry (nothing
--   is written then).
local refused = guard('keep', { K_ENTRIES, 'list' }, { K_INDEX, 'hash' })
if refused then return refused end
local pos = locate(ARGV[5])
if not pos then return 0 end
remove_at(K_ENTRIES, pos)
rebuild_index() -- later entries moved up by one
emit('entry_deleted', 'entry', ARGV[5], '{"qa_id":' .. json_str(ARGV[5]) .. '}')
finish_write()
return 1
