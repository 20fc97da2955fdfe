-- session_search_catchup: takes entries into the search index as
-- session_search_pending read them, the sidecar having analysed them,
-- when the list and the index are still as that read found them (every
-- entry's bytes the same). The index's covered prefix then reaches them.
-- Not activity: the record, the session's TTLs and its events are not
-- touched; the hash of documents gets the entries list's remaining TTL.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] start: the position of the first entry
-- ARGV[6] mode, as session_search_pending answered it: '1' drops the
--   session's entries from the index first; '2' writes the documents'
--   postings again (refresh_doc; anew when its text changed) and moves the
--   refresh cursor, not the covered prefix
-- ARGV[7] the index's ' cov' and ' refresh' fields as read (check)
-- ARGV[8] c, the number of entries (any prefix of what the read answered),
--   then for each: qa_id ('' for an element without one: not indexed),
--   fingerprint and SHA1 as read, then its document: spec ("term tf ...",
--   '' for no searchable word), length (-1: indexed already, skipped),
--   preview. A document's time is its entry's "time".
-- returns (reply.lua) {'ok', 1, more} when stored (more 1 when entries
--   after them are still to take in); {'ok', 0} when the list or the index
--   changed since the read (nothing written: read again); {'refused', ...}
--   when the user is being erased or a key holds another type (nothing
--   written).
--- @include reply
--- @include clock
--- @include guard
--- @include erasure
--- @include session
--- @include search

local c = session.open(KEYS, ARGV)
local start, mode, count = tonumber(ARGV[5]) or 0, ARGV[6], tonumber(ARGV[8]) or 0
if #ARGV ~= 8 + count * 6 then return redis.error_reply('ERR session_search_catchup: want 6 arguments per entry') end
local docs, now = {}, clock.now_us()
for i = 1, count do
  local j = 9 + (i - 1) * 6
  docs[i] = { id = ARGV[j], fp = ARGV[j + 1], sha = ARGV[j + 2], spec = ARGV[j + 3],
    len = tonumber(ARGV[j + 4]) or 0, preview = ARGV[j + 5] }
end
local refused = erasure.fenced(c) -- postings behind the erasure's scan would outlive it
  or guard.check({ { c.entries, 'list' }, { c.edocs, 'hash' }, { c.sstats, 'hash' } })
  or search.check_terms(c, docs)
if refused then return refused end
local f = redis.call('HMGET', c.edocs, ' cov', ' refresh')
if (f[1] or '') .. '\n' .. (f[2] or '') ~= ARGV[7] then return reply.ok(0) end
local llen = redis.call('LLEN', c.entries)
if start + count > llen then return reply.ok(0) end
local n = search.entries_cov(c)
if mode == '2' and start + count > n then return reply.ok(0) end
if count > 0 then
  local els = redis.call('LRANGE', c.entries, start, start + count - 1)
  for i, el in ipairs(els) do
    if redis.sha1hex(el) ~= docs[i].sha then return reply.ok(0) end
    docs[i].at = clock.entry_time_us(el) or now
  end
end

if mode == '1' then search.unindex_all(c, c.edocs) end
local _, _, since = search.entries_cov(c)
for _, d in ipairs(docs) do
  -- skipped: indexed already at the read; or indexed since (by the
  -- sidecar's own write, which is at least as new)
  if d.id ~= '' and d.len >= 0 then
    if mode == '2' then
      if not search.refresh_doc(c, c.edocs, 'entry', d.id, d.spec, d.len, d.preview) then
        search.index_doc(c, c.edocs, 'entry', d.id, d.spec, d.len, d.preview, d.at)
      end
    elseif redis.call('HEXISTS', c.edocs, 'entry\t' .. d.id) == 0 then
      search.index_doc(c, c.edocs, 'entry', d.id, d.spec, d.len, d.preview, d.at)
    end
  end
end
if mode == '2' then
  -- the refresh cursor moves; the walk ends at the covered prefix's end
  if count > 0 and start + count < n then
    redis.call('HSET', c.edocs, ' refresh', string.format('%d', start + count) .. '\t' .. docs[count].fp)
  elseif redis.call('EXISTS', c.edocs) == 1 then
    redis.call('HDEL', c.edocs, ' refresh')
  end
elseif count > 0 then
  search.set_cov(c, start + count, docs[count].fp)
end
-- ' since': when the last walk from the first entry began that wrote every
-- document (a rebuild, a refresh, or the first one)
if start == 0 and (mode ~= '0' or not since) and redis.call('EXISTS', c.edocs) == 1 then
  redis.call('HSET', c.edocs, ' since', string.format('%d', now))
end
-- the documents live as long as the list they describe (or, when it has
-- no expiry yet, the session's TTL)
if redis.call('EXISTS', c.edocs) == 1 then
  local lp, ttl = redis.call('PTTL', c.entries), session.ttl(c)
  if lp > 0 then
    redis.call('PEXPIRE', c.edocs, lp)
  elseif ttl > 0 and redis.call('PTTL', c.edocs) == -1 then
    redis.call('EXPIRE', c.edocs, ttl)
  end
end
local more = 0
if start + count < llen or (mode == '2' and n < llen) then more = 1 end
return reply.ok(1, more)
