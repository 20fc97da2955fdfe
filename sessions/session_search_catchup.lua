-- session_search_catchup: takes entries into the search index as
-- session_search_pending read them, the sidecar having analysed them,
-- when the list and the index are still as that read found them (every
-- entry's bytes the same). The index's covered prefix then reaches them.
-- Not activity: the session's last activity, TTLs and events are not
-- touched (session.commit's quiet write); the index gets the session's TTL
-- (the entries list's remaining TTL, for a session only Cognee wrote).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] start: the position of the first entry
-- ARGV[3] mode, as session_search_pending answered it: '1' drops the
--   session's entries from the index first
-- ARGV[4] the index's ' cov' as read (check)
-- ARGV[5] c, the number of entries (any prefix of what the read answered),
--   then for each: qa_id ('' for an element without one: not indexed),
--   fingerprint and SHA1 as read, then its document: spec ("term tf ...",
--   '' for no searchable word) and length (-1: indexed already, skipped).
--   A document's time is its entry's "time".
-- returns (reply.lua) {'ok', 1, more} when stored (more 1 when entries
--   after them are still to take in); {'ok', 0} when the list or the index
--   changed since the read (nothing written: read again); {'refused', ...}
--   when the user is being erased or a key holds another type (nothing
--   written).
--- @include reply
--- @include clock
--- @include guard
--- @include idindex
--- @include session
--- @include search

local c = idindex.open(session.open(KEYS, ARGV), '0')
local start, mode, count = tonumber(ARGV[2]) or 0, ARGV[3], tonumber(ARGV[5]) or 0
if #ARGV ~= 5 + count * 5 then return redis.error_reply('ERR session_search_catchup: want 5 arguments per entry') end
local docs, now = {}, session.now(c)
for i = 1, count do
  local j = 6 + (i - 1) * 5
  docs[i] = { id = ARGV[j], fp = ARGV[j + 1], sha = ARGV[j + 2], spec = ARGV[j + 3], len = tonumber(ARGV[j + 4]) or 0 }
end
-- a fenced user (being erased): an index behind the erasure's scan would
-- outlive it
local refused = session.begin(c)
if refused then return refused end
refused = search.prepare(c, 'entries') or guard.check({ { c.entries, 'list' } }) or session.commit(c, { quiet = true })
if refused then return refused end
if (redis.call('HGET', c.edocs, ' cov') or '') ~= ARGV[4] then return reply.ok(0) end
local llen = redis.call('LLEN', c.entries)
if start + count > llen then return reply.ok(0) end
if count > 0 then
  local els = redis.call('LRANGE', c.entries, start, start + count - 1)
  for i, el in ipairs(els) do
    if redis.sha1hex(el) ~= docs[i].sha then return reply.ok(0) end
    docs[i].at = clock.entry_time_us(el) or now
  end
end

if mode == '1' then
  search.unindex_all(c, c.edocs)
  c.edocs = session.use(c, search.ENTRY_DOCS, 'hash')
end
for _, d in ipairs(docs) do
  -- skipped: indexed already at the read; or indexed since (by the
  -- sidecar's own write, which is at least as new)
  if d.id ~= '' and d.len >= 0 and redis.call('HEXISTS', c.edocs, '=' .. d.id) == 0 then
    search.index_doc(c, c.edocs, d.id, d.spec, d.len, d.at)
  end
end
if count > 0 then search.set_cov(c, start + count, docs[count].fp) end
session.finish(c)
return reply.ok(1, start + count < llen and 1 or 0)
