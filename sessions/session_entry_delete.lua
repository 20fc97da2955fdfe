-- session_entry_delete: remove one Q&A entry by qa_id.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] qa_id
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
--- @include listedit
--- @include search

local c = idindex.open(session.open(KEYS, ARGV), ARGV[2])
local refused = session.begin(c)
if refused then return refused end
local qa_id = ARGV[3]
local pos, el, llen = idindex.locate(c, 'qa', qa_id)
if type(pos) == 'table' then return pos end
if not pos then return reply.missing() end
local indexed = session.has(c, search.ENTRY_DOCS)
local valid
if indexed then
  c.edocs = session.key(c, search.ENTRY_DOCS)
  refused = search.read_docs(c, c.edocs)
  if refused then return refused end
  local n, fp = search.entries_cov(c)
  valid = search.cov_valid(c, n, fp)
end
events.use(c)
refused = session.commit(c)
if refused then return refused end
listedit.remove_at(c, 'qa', pos, el, llen)
if llen == 1 then session.drop(c, idindex.ENTRIES) end
if indexed then
  search.unindex_doc(c, c.edocs, qa_id)
  search.entry_gone(c, pos, valid)
end
events.emit(c, 'entry_deleted', 'entry', qa_id, '{"qa_id":' .. cjson.encode(qa_id) .. '}')
session.finish(c, { 'entry_count', string.format('%d', llen - 1) })
return session.reply(c, reply.ok())
