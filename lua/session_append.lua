--! prelude: session_lib
-- session_append: append one Q&A entry to the session, idempotently by qa_id,
-- trim to SESSION_MAX_ENTRIES, keep the entry's search document, slide the
-- TTL of every key of the session and record the activity, all at once.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] qa_id
-- ARGV[6] the entry, as Cognee's json.dumps writes it
-- ARGV[7..9] when present, the entry's search document (question, context
--   and answer): spec "term tf ...", length, preview ("Search index" in
--   session_lib.lua); absent when the search index is off
-- emits entry_appended (the entry).
-- returns {1} when stored ({2} when this started the session), with a
--   second element 1 when the search index has entries to take in (another
--   program appended them, the list was rewritten, or the postings are due
--   a refresh: run session_search_pending, then session_search_catchup);
--   {0, stored_entry} when the session already held qa_id (a retried
--   append): nothing is written then; {'index_build', 'qa'} when telling
--   whether it holds qa_id needs more than one step of indexing (nothing
--   written but that step: run session_index_build, then this again).
-- Like that answer, a refusal (a key of another type) may follow one step
-- of the qa_id index (the sidecar's own lookup table of the list, brought
-- closer to the list as it is); nothing else is written.
local qa_id, entry, spec = ARGV[5], ARGV[6], ARGV[7]
local refused, rec
if spec then
  -- the postings (below) are the first writes then, before the event
  refused, rec = guard('keep', { K_ENTRIES, 'list', 'self' }, { K_INDEX, 'hash', 'self' },
    { K_EDOCS, 'hash' }, { K_SSTATS, 'hash' })
else
  refused, rec = guard('keep', { K_ENTRIES, 'list', 'self' }, { K_INDEX, 'hash', 'self' },
    { K_EVENTS, 'stream', 'self' })
end
if refused then return refused end

local pos, existing, llen, meta = locate('qa', qa_id)
if type(pos) == 'table' then return pos end
if pos then return { 0, existing } end
if not spec and MAX_ENTRIES > 0 and (llen + 1) * 4 > MAX_ENTRIES * 5 then
  -- without a document the search keys are written only by the trim
  -- below, and only when the session has documents (entries_removed): the
  -- documents hash, then the user's statistics, are checked then
  local key, got = K_EDOCS, key_type(K_EDOCS)
  if got == 'hash' then key, got = K_SSTATS, key_type(K_SSTATS) end
  if got ~= 'none' and got ~= 'hash' then return redis.error_reply('KEYTYPE ' .. key .. ' ' .. got .. ' hash') end
end

-- the index's fingerprint of the last element, which locate found current,
-- and its '#head'
local last_fp, head = '', 0
if llen > 0 then
  if not meta then meta = redis.call('HMGET', K_INDEX, '#len', '#last', '#first', '#head') end
  last_fp, head = meta[2] or '', tonumber(meta[4] or '0')
end
-- The entry's search document is written here when the index's covered
-- prefix reaches it; else (another program appended before it) the
-- catch-up indexes it with the entries before it: a document never lies
-- past the prefix. Its postings are the script's first writes: each ZADD
-- checks its key's type, and a refusal takes back the ones added before
-- it, so nothing is written (guard need not ask TYPE of every term).
local cov_since, refreshing, posted, dlen, dtime
local index_now = false
if spec then
  local n, fp
  n, fp, cov_since, refreshing = entries_cov()
  index_now = n == llen and (n == 0 or fp == last_fp)
end
if index_now and spec ~= '' then
  dlen, dtime = tonumber(ARGV[8]) or 0, entry_time_us(entry) or now_us()
  local cur = tonumber(redis.call('HGET', K_EDOCS, ' v') or '0') or 0
  posted = { v = cur + 1, fresh = cur == 0, p = {} }
  if posted.fresh then posted.v = now_us() end
  local member = SID .. '\tentry\t' .. qa_id .. '\t' .. string.format('%d', posted.v) .. '\t'
  local at, added = string.format('%d', dtime), {}
  for t, tf in string.gmatch(spec, '(%S+) (%d+)') do
    local key = SEARCH_PREFIX .. t
    local p = redis.call('PTTL', key)
    local m = member .. tf .. '\t' .. dlen
    -- NX: a member already there (a version repeated) is left as it was
    -- and not taken back
    local r = redis.pcall('ZADD', key, 'NX', at, m)
    if type(r) == 'table' then
      for _, a in ipairs(added) do redis.call('ZREM', a[1], a[2]) end
      return type_refusal(key, 'zset', r)
    end
    if r == 1 then added[#added + 1] = { key, m } end
    if posted.p[key] == nil then posted.p[key] = p end
  end
end

-- the event: its XADD checks the stream's type when it is the first write
local ev = emit('entry_appended', 'entry', qa_id, entry, not spec)
if type(ev) == 'table' then return ev end
local newlen = redis.call('RPUSH', K_ENTRIES, entry)
index_append('qa', qa_id, entry, newlen, head)
local pending = 0
if spec then
  local since = cov_since
  if index_now then
    index_doc(K_EDOCS, 'entry', qa_id, spec, tonumber(ARGV[8]) or 0, ARGV[9] or '', dtime or entry_time_us(entry) or now_us(), posted)
    set_cov(newlen, fingerprint('qa', entry))
    if not since then redis.call('HSET', K_EDOCS, ' since', string.format('%d', now_us())) end
  else
    pending = 1
  end
  if refreshing or refresh_due(since) then pending = 1 end
end
local removed, gone = trim(K_ENTRIES, newlen, 'qa')
if removed > 0 and entries_removed(removed, gone) then pending = 1 end

local _, started = finish_write(false, newlen == 1, newlen - removed, newlen == 1, rec)
return { stored_flag(started), pending }
