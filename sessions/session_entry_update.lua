-- session_entry_update: change fields of one Q&A entry in place (PATCH,
-- feedback set and clear). Only the named top-level fields change; every other
-- byte of the entry stays as it was. memify_metadata is merged key-wise.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] qa_id
-- ARGV[4] memify_metadata patch (a JSON object) or '' for none
-- ARGV[5], ARGV[6], ... pairs of field name and new raw JSON value
-- emits feedback (a feedback_* field set or cleared) or entry_updated: the
--   updated entry.
-- returns (reply.lua) {'ok', updated entry}, or {'missing'} when the
--   session holds no such entry (nothing is written then, and no key is
--   created); {'refused', 'stored_value_invalid', ...} when the stored entry
--   is not a JSON object (nothing is written); {'index_build', 'qa'} when
--   finding it needs more index steps (nothing written but one step: run
--   session_index_build, then this again).
-- An entry whose question, context or answer changes leaves the search
-- index here, so its old words are never found again; the sidecar indexes
-- its new text right after (session_search_entry).
--- @include reply
--- @include json
--- @include session
--- @include events
--- @include idindex
--- @include search

local c = idindex.open(session.open(KEYS, ARGV), ARGV[2])
local refused = session.begin(c)
if refused then return refused end
local qa_id, memify = ARGV[3], ARGV[4]
local text, typ = false, 'entry_updated'
for i = 5, #ARGV, 2 do
  if ARGV[i] == 'question' or ARGV[i] == 'context' or ARGV[i] == 'answer' then text = true end
  if string.sub(ARGV[i], 1, 9) == 'feedback_' then typ = 'feedback' end
end
local found = idindex.locate_new(c, 'qa', qa_id, true)
if found.answer then return found.answer end
if not found.dup then return reply.missing() end
local el = found.dup

local ok, updated = pcall(function()
  local updates = {}
  for i = 5, #ARGV, 2 do updates[#updates + 1] = { ARGV[i], ARGV[i + 1] } end
  if memify ~= '' then
    updates[#updates + 1] = { 'memify_metadata', json.merge_object(json.field_raw(el, 'memify_metadata'), memify) }
  end
  return json.set_fields(el, updates)
end)
if not ok then -- another writer stored an element that is not a JSON object
  return reply.bad_value(c.entries, qa_id)
end
local indexed = text and session.has(c, search.ENTRY_DOCS)
if indexed then
  c.edocs = session.key(c, search.ENTRY_DOCS)
  refused = search.read_docs(c, c.edocs)
  if refused then return refused end
end
events.use(c)
refused = session.commit(c)
if refused then return refused end
redis.call('LSET', c.entries, found.pos, updated)
if indexed then search.unindex_doc(c, c.edocs, qa_id) end
events.emit(c, typ, 'entry', qa_id, updated)
session.finish(c)
return session.reply(c, reply.ok(updated))
