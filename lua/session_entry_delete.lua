--! prelude: session_lib
-- session_entry_delete: remove one Q&A entry by qa_id.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] qa_id
-- emits entry_deleted {qa_id}.
-- The entry leaves the search index.
-- returns 1 when removed, 0 when the session holds no such entry (nothing
--   is written then); {'index_build', 'qa'} when finding it needs more
--   index steps (session_index_build, then this again).
local refused = guard('keep', { K_ENTRIES, 'list' }, { K_INDEX, 'hash' }, { K_EDOCS, 'hash' }, { K_SSTATS, 'hash' })
if refused then return refused end
local llen = redis.call('LLEN', K_ENTRIES)
local pos, el = locate('qa', ARGV[5], llen)
if type(pos) == 'table' then return pos end
if not pos then return 0 end
local n, fp = entries_cov()
local valid = cov_valid(n, fp)
remove_at('qa', pos, el, llen)
unindex_doc(K_EDOCS, 'entry', ARGV[5])
entry_gone(pos, valid)
emit('entry_deleted', 'entry', ARGV[5], '{"qa_id":' .. cjson.encode(ARGV[5]) .. '}')
finish_write(false, false, llen - 1)
return 1
