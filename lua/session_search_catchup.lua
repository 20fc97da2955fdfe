--! prelude: session_lib
-- session_search_catchup: puts entries another program appended into the
-- search index (their documents analysed by the sidecar from what
-- session_search_pending read), when the list and the index are still as
-- that read found them. The index's covered prefix then reaches them. Not
-- activity: the record, the session's TTLs and its events are not touched
-- (a new hash of documents gets the session's TTL).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] start: the position of the first entry
-- ARGV[6] restart: '1' drops the session's entries from the index first
-- ARGV[7] the index's ' cov' field as read ('' for none)
-- ARGV[8] c, the number of entries, then for each as the read answered:
--   qa_id ('' for an element without one: not indexed) and fingerprint,
--   then its document: spec ("term tf ...", '' for no searchable word),
--   length, preview. A document's time is its entry's "time".
-- returns {1, more} when stored (more 1 when entries after them are still
--   pending); {0} when the list or the index changed since the read
--   (nothing written: read again); a KEYTYPE error when a key holds
--   another type (nothing written).
local start, restart, c = tonumber(ARGV[5]) or 0, ARGV[6] == '1', tonumber(ARGV[8]) or 0
if #ARGV ~= 8 + c * 5 then return redis.error_reply('ERR session_search_catchup: want 5 arguments per entry') end
local docs, now = {}, now_us()
for i = 1, c do
  local j = 9 + (i - 1) * 5
  docs[i] = { id = ARGV[j], fp = ARGV[j + 1], spec = ARGV[j + 2], len = tonumber(ARGV[j + 3]) or 0,
    preview = ARGV[j + 4] }
end
for _, k in ipairs({ { K_ENTRIES, 'list' }, { K_EDOCS, 'hash' }, { K_SSTATS, 'hash' } }) do
  local got = key_type(k[1])
  if got ~= 'none' and got ~= k[2] then
    return redis.error_reply('KEYTYPE ' .. k[1] .. ' ' .. got .. ' ' .. k[2])
  end
end
local refused = check_terms(docs)
if refused then return refused end
if (redis.call('HGET', K_EDOCS, ' cov') or '') ~= ARGV[7] then return { 0 } end
local llen = redis.call('LLEN', K_ENTRIES)
if start + c > llen then return { 0 } end
if c > 0 then
  local els = redis.call('LRANGE', K_ENTRIES, start, start + c - 1)
  for i, el in ipairs(els) do
    if fingerprint('qa', el) ~= docs[i].fp then return { 0 } end
    docs[i].at = entry_time_us(el) or now
  end
end

if restart then unindex_all(K_EDOCS) end
for _, d in ipairs(docs) do
  if d.id ~= '' then index_doc(K_EDOCS, 'entry', d.id, d.spec, d.len, d.preview, d.at) end
end
if c > 0 then set_cov(start + c, docs[c].fp) end
local ttl = session_ttl()
if ttl > 0 and redis.call('PTTL', K_EDOCS) == -1 then redis.call('EXPIRE', K_EDOCS, ttl) end
local more = 0
if start + c < llen then more = 1 end
return { 1, more }
