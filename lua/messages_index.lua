-- messages_index: puts a batch of this session's messages into the search
-- index, their documents analysed by the sidecar from the messages as it
-- read them (a fork's copies, a batch at a time after the fork). A message
-- is indexed only while its tree node still holds the fingerprint that
-- read found; one written or deleted since is skipped (that write kept the
-- index). Not activity: the record, the session's TTLs and its events are
-- not touched (a new hash of documents gets the session's TTL).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] k, the number of messages, then for each: id, fingerprint (its
--   node's, as read), spec ("term tf ...", '' for no searchable word),
--   length, preview, time (µs since the epoch: the document's time, its
--   message's created_at; '' for now). The sidecar sends at most 100
--   messages and 4 096 terms a call.
-- returns (reply.lua) {'ok', n}: n of the k messages indexed, the others
--   skipped; {'refused', 'key_wrong_type', text} when a key holds another
--   type, {'refused', 'user_erasing', text} when the user is being erased
--   (nothing written).
--- @include reply
--- @include clock
--- @include guard
--- @include erasure
--- @include session
--- @include search
--- @include msgtree

local c = msgtree.open(session.open(KEYS, ARGV))
local k = tonumber(ARGV[5]) or 0
if #ARGV ~= 5 + k * 6 then return redis.error_reply('ERR messages_index: want 6 arguments per message') end
local refused = erasure.fenced(c) -- postings behind the erasure's scan would outlive it
  or guard.check({ { c.mtree, 'hash' }, { c.sdocs, 'hash' }, { c.sstats, 'hash' } })
if refused then return refused end
local now = clock.now_us()
local docs = {}
for i = 1, k do
  local j = 6 + (i - 1) * 6
  local d = { id = ARGV[j], fp = ARGV[j + 1], spec = ARGV[j + 2], len = tonumber(ARGV[j + 3]) or 0,
    preview = ARGV[j + 4], at = tonumber(ARGV[j + 5]) or now }
  local n = msgtree.node(c, d.id)
  if n and n.fp == d.fp then docs[#docs + 1] = d end
end
refused = search.check_terms(c, docs)
if refused then return refused end

for _, d in ipairs(docs) do
  search.index_doc(c, c.sdocs, 'message', d.id, d.spec, d.len, d.preview, d.at)
end
return reply.ok(#docs)
