--! prelude: session_lib
-- session_search_pending: the entries of the session the search index has
-- not taken in yet (another program, such as Cognee, appended them), at
-- most one step of them (256 entries, about 1 MiB: read_range). Reads
-- only. The sidecar analyses them and stores them with
-- session_search_catchup.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- returns {start, restart, cov, id, fingerprint, entry, ...}: the entries
--   from position start (0-based) on, each with its qa_id as the scripts
--   read it ('' for none) and its fingerprint; restart 1 when the index no longer describes the list
--   (another program rewrote it: the index is made again from position 0);
--   cov the index's ' cov' field as read ('' for none), which
--   session_search_catchup checks is unchanged. No entry: nothing pending
--   (or the keys hold other types: the write refuses them).
if key_type(K_ENTRIES) ~= 'list' or key_type(K_EDOCS) == 'string' then return { 0, 0, '' } end
local t = key_type(K_EDOCS)
if t ~= 'none' and t ~= 'hash' then return { 0, 0, '' } end
local llen = redis.call('LLEN', K_ENTRIES)
local raw = redis.call('HGET', K_EDOCS, ' cov') or ''
local n, fp = entries_cov()
local restart = 0
if n > llen or (n > 0 and fingerprint('qa', redis.call('LINDEX', K_ENTRIES, n - 1)) ~= fp) then
  n, restart = 0, 1
end
if n >= llen then return { n, restart, raw } end
local out = { n, restart, raw }
for _, el in ipairs(read_range(K_ENTRIES, n, llen - 1)) do
  out[#out + 1] = id_of(el, 'qa_id') or ''
  out[#out + 1] = fingerprint('qa', el)
  out[#out + 1] = el
end
return out
