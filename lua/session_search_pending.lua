--! prelude: session_lib
-- session_search_pending: what the search index has to take in of the
-- session's entries list, at most one step of it (ARGV[5] entries, at most
-- 256, and about 1 MiB: read_range). Reads only. The sidecar analyses the entries and stores
-- them with session_search_catchup.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the most entries to answer (1-256)
-- returns {start, mode, cov, id, fingerprint, sha1, entry, ...}: the
--   entries from position start (0-based) on, each with its qa_id as the
--   scripts read it ('' for none), its fingerprint, the SHA1 of its bytes
--   and its bytes ('' when it is indexed already and mode is 0: nothing to
--   analyse). mode 0: entries after the covered prefix (another program
--   appended them); 1: the index no longer describes the list (another
--   program rewrote or deleted it): every document is dropped and the
--   list taken in again from position 0; 2: the index began more than
--   half the session's TTL ago: taken in again from position 0, each
--   document written anew, so its postings live on with the session (the
--   field ' refresh' marks such a walk under way: it goes on from the
--   covered prefix, still in mode 2, until it reaches the list's end). cov
--   is the index's ' cov' field as read ('' for none), which
--   session_search_catchup checks is unchanged. {start, 0, cov} alone:
--   nothing to do (or a key holds another type: the write refuses it).
local lt, dt = key_type(K_ENTRIES), key_type(K_EDOCS)
if (lt ~= 'none' and lt ~= 'list') or (dt ~= 'none' and dt ~= 'hash') then return { 0, 0, '' } end
local llen = redis.call('LLEN', K_ENTRIES)
local raw = redis.call('HGET', K_EDOCS, ' cov') or ''
local n, fp, since = entries_cov()
local mode = 0
if n > llen or not cov_valid(n, fp) or (llen == 0 and dt == 'hash') then
  n, mode = 0, 1
elseif redis.call('HEXISTS', K_EDOCS, ' refresh') == 1 then
  mode = 2
elseif refresh_due(since) then
  n, mode = 0, 2
end
if n >= llen and mode == 0 then return { n, 0, raw } end
local most = math.max(1, math.min(256, tonumber(ARGV[5]) or 1))
local els = read_range(K_ENTRIES, n, math.min(llen, n + most) - 1)
local ids = {}
for i, el in ipairs(els) do ids[i] = id_of(el, 'qa_id') or '' end
local known = {}
if mode == 0 and #els > 0 then
  local f = {}
  for i, id in ipairs(ids) do f[i] = 'entry\t' .. id end
  known = redis.call('HMGET', K_EDOCS, unpack(f))
end
local out = { n, mode, raw }
for i, el in ipairs(els) do
  out[#out + 1] = ids[i]
  out[#out + 1] = fingerprint('qa', el)
  out[#out + 1] = redis.sha1hex(el)
  if known[i] then out[#out + 1] = '' else out[#out + 1] = el end
end
return out
