--! prelude: session_lib
-- session_context_delete: remove the session-context entry whose "id" matches.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the entry's id
-- emits context_changed {id, deleted: true}.
-- returns 1 when removed, 0 when there is no such entry;
--   {'index_build', 'context'} when finding it needs more index steps
--   (session_index_build, then this again).
local refused = guard('keep', { K_CONTEXT, 'list' }, { K_CTX_INDEX, 'hash' })
if refused then return refused end
local llen = redis.call('LLEN', K_CONTEXT)
local pos, el = locate('context', ARGV[5], llen)
if type(pos) == 'table' then return pos end
if not pos then return 0 end
remove_at('context', pos, el, llen)
emit('context_changed', 'context', ARGV[5], '{"id":' .. cjson.encode(ARGV[5]) .. ',"deleted":true}')
finish_write()
return 1
