-- session_append: append one Q&A entry to the session, idempotently by qa_id,
-- trim to SESSION_MAX_ENTRIES, keep the entry's search document and record
-- the activity, all at once.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES (0 = unbounded)
-- ARGV[3] qa_id
-- ARGV[4] the entry, as Cognee's json.dumps writes it
-- ARGV[5..6] when present, the entry's search document (question, context
--   and answer): spec "term tf ..." and length (search/search.lua); absent
--   when the search index is off; a spec prefixed with '?' is indexed only
--   while the user has an index (SEARCH_INDEX=on-demand: search.wanted);
--   '?!': no document sent (the sidecar believes the user has no index:
--   when the user has one, the answer says pending and the catch-up
--   indexes the entry)
-- emits entry_appended (the entry).
-- returns (reply.lua) {'ok', started, pending} when stored: started 1 when
--   this started the session, pending 1 when the search index has entries
--   to take in (another program appended them, or the list was rewritten:
--   run session_search_pending, then session_search_catchup);
--   {'dup', stored_entry} when the session already held qa_id (a retried
--   append): nothing is written then; {'index_build', 'qa'} when telling
--   whether it holds qa_id needs more than one step of indexing (nothing
--   written but that step: run session_index_build, then this again);
--   {'refused', ...} (a key of another type).
-- Like that answer, a refusal may follow one step of the qa_id index (the
-- sidecar's own lookup table of the list, brought closer to the list as it
-- is); nothing else is written.
-- Redis commands, an existing session within the grain: the record and
-- the marker (session.begin), the index and the list's last element
-- (idindex.locate_new), TIME, RPUSH, the index's and the record's HSET.
--- @include reply
--- @include clock
--- @include session
--- @include events
--- @include idindex
--- @include listedit
--- @include search

local c = idindex.open(session.open(KEYS, ARGV), ARGV[2])
local refused = session.begin(c)
if refused then return refused end
local qa_id, entry = ARGV[3], ARGV[4]
local spec = search.wanted(c, ARGV[5])

local found = idindex.locate_new(c, 'qa', qa_id)
if found.answer then return found.answer end
if found.dup then return session.reply(c, reply.dup(found.dup)) end
session.use(c, idindex.ENTRIES, 'list', true)
session.use(c, idindex.QA_INDEX, 'hash', true)
if spec then
  refused = search.prepare(c, 'entries')
  if refused then return refused end
elseif c.max_entries > 0 and (found.llen + 1) * 4 > c.max_entries * 5 and session.has(c, search.ENTRY_DOCS) then
  -- without a document the search index is written only by the trim
  -- below (entries_removed)
  c.edocs = session.key(c, search.ENTRY_DOCS)
  refused = search.read_docs(c, c.edocs)
  if refused then return refused end
end
events.use(c)
refused = session.commit(c)
if refused then return refused end

local newlen = redis.call('RPUSH', c.entries, entry)
if newlen == 1 then session.made(c, idindex.ENTRIES) end
idindex.appended(c, 'qa', qa_id, entry, newlen, found)
-- The entry's search document is written here when the index's covered
-- prefix reaches it; else (another program appended before it) the
-- catch-up indexes it with the entries before it: a document never lies
-- past the prefix.
local pending = 0
if spec then
  local n, fp = search.entries_cov(c)
  if n == found.llen and (n == 0 or fp == found.last_fp) then
    search.index_doc(c, c.edocs, qa_id, spec, ARGV[6], clock.entry_time_us(entry) or session.now(c))
    search.set_cov(c, newlen, idindex.fingerprint('qa', entry))
  else
    pending = 1
  end
end
if c.search_pending then pending = 1 end
local removed, gone = listedit.trim(c, c.entries, newlen, 'qa')
if removed > 0 and search.entries_removed(c, removed, gone) then pending = 1 end
events.emit(c, 'entry_appended', 'entry', qa_id, entry)

-- a session's first entry is its start, unless another writer began the
-- list (session.finish then takes that one's time)
local started = session.finish(c, { 'entry_count', tostring(newlen - removed) },
  newlen == 1 and { started_at = c.now_text } or nil)
return session.reply(c, reply.ok(started and 1 or 0, pending))
