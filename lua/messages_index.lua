--! prelude: messages_lib
-- messages_index: puts a batch of this session's messages into the search
-- index, their documents analysed by the sidecar from the messages as it
-- read them (a fork's copies, a batch at a time after the fork). A message
-- is indexed only while its tree node still holds the fingerprint that
-- read found; one written or deleted since is skipped (that write kept the
-- index). Not activity: the record, the session's TTLs and its events are
-- not touched (a new hash of documents gets the session's TTL).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] c, the number of messages, then for each: id, fingerprint (its
--   node's, as read), spec ("term tf ...", '' for no searchable word),
--   length, preview, time (µs since the epoch: the document's time, its
--   message's created_at; '' for now). The sidecar sends at most 100
--   messages and 4 096 terms a call.
-- returns {1, n}: n of the c messages indexed, the others skipped; a
--   KEYTYPE error when a key holds another type (nothing written).
local c = tonumber(ARGV[5]) or 0
if #ARGV ~= 5 + c * 6 then return redis.error_reply('ERR messages_index: want 6 arguments per message') end
for _, k in ipairs({ { K_MTREE, 'hash' }, { K_SDOCS, 'hash' }, { K_SSTATS, 'hash' } }) do
  local got = key_type(k[1])
  if got ~= 'none' and got ~= k[2] then
    return redis.error_reply('KEYTYPE ' .. k[1] .. ' ' .. got .. ' ' .. k[2])
  end
end
local now = now_us()
local docs = {}
for i = 1, c do
  local j = 6 + (i - 1) * 6
  local d = { id = ARGV[j], fp = ARGV[j + 1], spec = ARGV[j + 2], len = tonumber(ARGV[j + 3]) or 0,
    preview = ARGV[j + 4], at = tonumber(ARGV[j + 5]) or now }
  local n = node(d.id)
  if n and n.fp == d.fp then docs[#docs + 1] = d end
end
local refused = check_terms(docs)
if refused then return refused end

for _, d in ipairs(docs) do
  index_doc(K_SDOCS, 'message', d.id, d.spec, d.len, d.preview, d.at)
end
return { 1, #docs }
