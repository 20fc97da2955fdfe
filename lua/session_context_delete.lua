--! prelude: session_lib
-- session_context_delete: remove the session-context entry whose "id" matches.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the entry's id
-- emits context_changed {id, deleted: true}.
-- returns 1 when removed, 0 when there is no such entry.
local refused = guard('keep', { K_CONTEXT, 'list' })
if refused then return refused end
local pos = find_by_id(K_CONTEXT, 'id', ARGV[5])
if not pos then return 0 end
remove_at(K_CONTEXT, pos)
emit('context_changed', 'context', ARGV[5], '{"id":' .. json_str(ARGV[5]) .. ',"deleted":true}')
finish_write()
return 1
