-- session_search_pending: what the search index has to take in of the
-- session's entries list, at most one step of it (ARGV[2] entries, at most
-- 256, and about 1 MiB: read_range). The sidecar analyses the entries and
-- stores them with session_search_catchup. Reads only (no-writes): an
-- index another program spoiled (its ' seq' no number) is answered as
-- mode 1.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the most entries to answer (1-256)
-- returns (reply.lua) {'ok', start, mode, check, id, fingerprint, sha1,
--   entry, ...}: the entries from position start (0-based) on, each with
--   its qa_id as the scripts read it ('' for none), its fingerprint, the
--   SHA1 of its bytes and its bytes ('' when it is indexed already:
--   nothing to analyse). mode
--   1: the index no longer describes the list (another program rewrote or
--      deleted it): every document is dropped and the list taken in again
--      from position 0;
--   0: the entries after the covered prefix (another program appended
--      them).
--   check is the index's ' cov' as read, which session_search_catchup
--   checks is unchanged. {'ok', start, 0, check} alone: nothing to do (or
--   a key holds another type: the write refuses it).
--- @include reply
--- @include json
--- @include guard
--- @include idindex
--- @include search
--- @include session

local c = idindex.open(session.open(KEYS, ARGV), '0')
c.edocs = session.key(c, search.ENTRY_DOCS)
local lt, dt = guard.key_type(c.entries), guard.key_type(c.edocs)
if (lt ~= 'none' and lt ~= 'list') or (dt ~= 'none' and dt ~= 'hash') then return reply.ok(0, 0, '') end
local llen = redis.call('LLEN', c.entries)
local n, fp, spoiled = search.entries_cov(c)
local check = redis.call('HGET', c.edocs, ' cov') or ''
local mode, start = 0, n
if spoiled or n > llen or not search.cov_valid(c, n, fp) or (llen == 0 and redis.call('EXISTS', c.edocs) == 1) then
  mode, start = 1, 0
end
if start >= llen and mode == 0 then return reply.ok(start, 0, check) end
local most = math.max(1, math.min(256, tonumber(ARGV[2]) or 1))
local els = idindex.read_range(c.entries, start, math.min(llen, start + most) - 1)
local ids = {}
for i, el in ipairs(els) do ids[i] = json.id_of(el, 'qa_id') or '' end
local known = {}
if mode == 0 and #els > 0 then
  local fs = {}
  for i, id in ipairs(ids) do fs[i] = '=' .. id end
  known = redis.call('HMGET', c.edocs, unpack(fs))
end
local out = { 'ok', start, mode, check }
for i, el in ipairs(els) do
  out[#out + 1] = ids[i]
  out[#out + 1] = idindex.fingerprint('qa', el)
  out[#out + 1] = redis.sha1hex(el)
  if known[i] then out[#out + 1] = '' else out[#out + 1] = el end
end
return out
