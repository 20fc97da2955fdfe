-- session_entry_delete: remove one Q&A entry by qa_id.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] qa_id
-- emits entry_deleted {qa_id}.
-- The entry leaves the search index.
-- returns (reply.lua) {'ok'} when removed, {'missing'} when the session
--   holds no such entry (nothing is written then); {'index_build', 'qa'}
--   when finding it needs more index steps (session_index_build, then this
--   again); {'refused', ...}.
--- @include reply
--- @include session
--- @include events
--- @include idindex
--- @include search

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'keep', { c.entries, 'list' }, { c.qa_index, 'hash' }, { c.edocs, 'hash' })
if refused then return refused end
local llen = redis.call('LLEN', c.entries)
local pos, el = idindex.locate(c, 'qa', ARGV[5], llen)
if type(pos) == 'table' then return pos end
if not pos then return reply.missing() end
local n, fp = search.entries_cov(c)
local valid = search.cov_valid(c, n, fp)
idindex.remove_at(c, 'qa', pos, el, llen)
search.unindex_doc(c, c.edocs, ARGV[5])
search.entry_gone(c, pos, valid)
events.emit(c, 'entry_deleted', 'entry', ARGV[5], '{"qa_id":' .. cjson.encode(ARGV[5]) .. '}')
session.finish_write(c, false, false, llen - 1)
return reply.ok()
