-- messages_index: one step of the messages' catch-up (messages/index.go):
-- puts a batch of this session's messages into the search index, their
-- documents analysed by the sidecar from the messages as it read them (in
-- the order of their sequence numbers, from the cursor ' mseq' of the
-- session's documents hash on). A message is indexed only while its tree
-- node still holds the fingerprint that read found and it has no document
-- yet; one written or deleted since is skipped (that write kept the
-- index). Not activity: the record, the session's TTLs and its events are
-- not touched (a new hash of documents gets the session's TTL).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the cursor: the sequence number of the last message read
-- ARGV[6] k, the number of messages, then for each: id, fingerprint (its
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
local k = tonumber(ARGV[6]) or 0
if #ARGV ~= 6 + k * 6 then return redis.error_reply('ERR messages_index: want 6 arguments per message') end
local refused = erasure.fenced(c) -- postings behind the erasure's scan would outlive it
  or guard.check({ { c.mtree, 'hash' }, { c.sdocs, 'hash' }, { c.sstats, 'hash' } })
if refused then return refused end
local now = clock.now_us()
local docs = {}
for i = 1, k do
  local j = 7 + (i - 1) * 6
  local d = { id = ARGV[j], fp = ARGV[j + 1], spec = ARGV[j + 2], len = tonumber(ARGV[j + 3]) or 0,
    preview = ARGV[j + 4], at = tonumber(ARGV[j + 5]) or now }
  local n = msgtree.node(c, d.id)
  if n and n.fp == d.fp and redis.call('HEXISTS', c.sdocs, 'message\t' .. d.id) == 0 then docs[#docs + 1] = d end
end
refused = search.check_terms(c, docs)
if refused then return refused end

for _, d in ipairs(docs) do
  search.index_doc(c, c.sdocs, 'message', d.id, d.spec, d.len, d.preview, d.at)
end
local made = redis.call('EXISTS', c.sdocs) == 0
local at = tonumber(redis.call('HGET', c.sdocs, ' mseq') or '0') or 0
if (tonumber(ARGV[5]) or 0) > at then
  redis.call('HSET', c.sdocs, ' mseq', ARGV[5])
  local ttl = session.ttl(c)
  if made and ttl > 0 then redis.call('EXPIRE', c.sdocs, ttl) end
end
return reply.ok(#docs)
