-- session_append: append one Q&A entry to the session, idempotently by qa_id,
-- trim to SESSION_MAX_ENTRIES, keep the entry's search document, slide the
-- TTL of every key of the session and record the activity, all at once.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] qa_id
-- ARGV[6] the entry, as Cognee's json.dumps writes it
-- ARGV[7..8] when present, the entry's search document (question, context
--   and answer): spec "term tf ..." and length (lib/search.lua); absent
--   when the search index is off; a spec
--   prefixed with '?' is indexed only while the user has an index
--   (SEARCH_INDEX=on-demand: search.wanted); '?!': no document sent
--   (the sidecar believes the user has no index: when the user has one,
--   the answer says pending and the catch-up indexes the entry)
-- emits entry_appended (the entry).
-- returns (reply.lua) {'ok', started, pending} when stored: started 1 when
--   this started the session, pending 1 when the search index has entries
--   to take in (another program appended them, or the list was rewritten:
--   run session_search_pending, then
--   session_search_catchup); {'dup', stored_entry} when the session already
--   held qa_id (a retried append): nothing is written then;
--   {'index_build', 'qa'} when telling whether it holds qa_id needs more
--   than one step of indexing (nothing written but that step: run
--   session_index_build, then this again); {'refused', ...} (a key of
--   another type).
-- Like that answer, a refusal may follow one step of the qa_id index (the
-- sidecar's own lookup table of the list, brought closer to the list as it
-- is); nothing else is written.
--- @include reply
--- @include json
--- @include clock
--- @include guard
--- @include session
--- @include events
--- @include idindex
--- @include search

local c = session.open(KEYS, ARGV)
-- '?!': on-demand, and the sidecar sent no document (it believes the user
-- has no index); if the user has one, the entry is written without and
-- left to the catch-up (pending: search.wanted)
local qa_id, entry, spec = ARGV[5], ARGV[6], search.wanted(c, ARGV[7])
local keys = { { c.entries, 'list', 'self' }, { c.qa_index, 'hash', 'self' }, { c.events, 'stream', 'self' } }
if spec then keys[4], keys[5] = { c.edocs, 'hash' }, { c.slist, 'zset' } end
local refused, rec = session.guard(c, 'keep', unpack(keys))
if refused then return refused end

local pos, existing, llen, meta = idindex.locate(c, 'qa', qa_id)
if type(pos) == 'table' then return pos end
if pos then return reply.dup(existing) end
if not spec and c.max_entries > 0 and (llen + 1) * 4 > c.max_entries * 5 then
  -- without a document the index is written only by the trim below, and
  -- only when the session has one (entries_removed): checked then
  local got = guard.key_type(c.edocs)
  if got ~= 'none' and got ~= 'hash' then return guard.refusal(c.edocs, got, 'hash') end
end

-- the index's fingerprint of the last element, which locate found current,
-- and its '#head'
local last_fp, head = '', 0
if llen > 0 then
  if not meta then meta = redis.call('HMGET', c.qa_index, '#len', '#last', '#first', '#head') end
  last_fp, head = meta[2] or '', tonumber(meta[4] or '0')
end

-- the event: its XADD checks the stream's type when it is the first write
local ev = events.emit(c, 'entry_appended', 'entry', qa_id, entry, not spec)
if type(ev) == 'table' then return ev end
local newlen = redis.call('RPUSH', c.entries, entry)
idindex.append(c, 'qa', qa_id, entry, newlen, head)
-- The entry's search document is written here when the index's covered
-- prefix reaches it; else (another program appended before it) the
-- catch-up indexes it with the entries before it: a document never lies
-- past the prefix.
local pending = 0
if spec then
  local n, fp = search.entries_cov(c)
  if n == llen and (n == 0 or fp == last_fp) then
    search.index_doc(c, c.edocs, qa_id, spec, ARGV[8], clock.entry_time_us(entry) or clock.now_us())
    search.set_cov(c, newlen, idindex.fingerprint('qa', entry))
  else
    pending = 1
  end
end
if c.search_pending then pending = 1 end
local removed, gone = idindex.trim(c, c.entries, newlen, 'qa')
if removed > 0 and search.entries_removed(c, removed, gone) then pending = 1 end

local _, started = session.finish_write(c, false, newlen == 1, newlen - removed, newlen == 1, rec)
return reply.ok(started and 1 or 0, pending)
