-- session_entry_update: change fields of one Q&A entry in place (PATCH,
-- feedback set and clear). Only the named top-level fields change; every other
-- byte of the entry stays as it was. memify_metadata is merged key-wise.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] qa_id
-- ARGV[6] memify_metadata patch (a JSON object) or '' for none
-- ARGV[7], ARGV[8], ... pairs of field name and new raw JSON value
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

local c = session.open(KEYS, ARGV)
local text = false
for i = 7, #ARGV, 2 do
  if ARGV[i] == 'question' or ARGV[i] == 'context' or ARGV[i] == 'answer' then text = true end
end
local checks = { { c.entries, 'list', 'self' }, { c.qa_index, 'hash', 'self' }, { c.events, 'stream', 'self' } }
if text then checks[4] = { c.edocs, 'hash' } end
local refused, rec = session.guard(c, 'keep', unpack(checks))
if refused then return refused end
local qa_id, memify = ARGV[5], ARGV[6]
local pos, el, llen = idindex.locate(c, 'qa', qa_id)
if type(pos) == 'table' then return pos end
if not pos then return reply.missing() end

local ok, updated = pcall(function()
  local updates = {}
  for i = 7, #ARGV, 2 do updates[#updates + 1] = { ARGV[i], ARGV[i + 1] } end
  if memify ~= '' then
    updates[#updates + 1] = { 'memify_metadata', json.merge_object(json.field_raw(el, 'memify_metadata'), memify) }
  end
  return json.set_fields(el, updates)
end)
if not ok then -- another writer stored an element that is not a JSON object
  return reply.bad_value(c.entries, qa_id)
end
local typ = 'entry_updated'
for i = 7, #ARGV, 2 do
  if string.sub(ARGV[i], 1, 9) == 'feedback_' then typ = 'feedback' end
end
-- the event first: its XADD checks the stream's type (nothing written yet)
local ev = events.emit(c, typ, 'entry', qa_id, updated, true)
if type(ev) == 'table' then return ev end
redis.call('LSET', c.entries, pos, updated)
if text then search.unindex_doc(c, c.edocs, qa_id) end

session.finish_write(c, false, false, llen, false, rec)
return reply.ok(updated)
