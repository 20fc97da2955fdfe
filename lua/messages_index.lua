-- messages_index: one step of the messages' catch-up (messages/index.go):
-- puts a batch of this session's messages into the search index, their
-- documents analysed by the sidecar from the messages as it read them (in
-- the order of their sequence numbers, from the cursor ' mseq' of the
-- session's index on). A message is indexed only while its tree node
-- still holds the fingerprint that read found and it has no document yet;
-- one written or deleted since is skipped (that write kept the index).
-- Not activity: the record, the session's TTLs and its events are not
-- touched (the index gets the remaining TTL of the session's messages).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the cursor the read began after ('0': the first message)
-- ARGV[6] the cursor after it: the sequence number of the last message read
-- ARGV[7] k, the number of messages, then for each: id, fingerprint (its
--   node's, as read), spec ("term tf ...", '' for no searchable word),
--   length, time (µs since the epoch: the document's time, its message's
--   created_at; '' for now). The sidecar sends at most 100 messages and
--   256 terms a call.
-- returns (reply.lua) {'ok', n}: n of the k messages indexed, the others
--   skipped; {'ok', -1} when the cursor moved since the read (nothing
--   written: read again); {'refused', 'key_wrong_type', text} when a key
--   holds another type, {'refused', 'user_erasing', text} when the user is
--   being erased (nothing written).
--- @include reply
--- @include clock
--- @include guard
--- @include erasure
--- @include session
--- @include search
--- @include msgtree

local c = msgtree.open(session.open(KEYS, ARGV))
local k = tonumber(ARGV[7]) or 0
if #ARGV ~= 7 + k * 5 then return redis.error_reply('ERR messages_index: want 5 arguments per message') end
local refused = erasure.fenced(c) -- an index behind the erasure's scan would outlive it
  or guard.check({ { c.mtree, 'hash' }, { c.sdocs, 'hash' }, { c.slist, 'zset' } })
if refused then return refused end
search.current(c, c.sdocs)
-- the index dropped (a big delete, a clear) or moved on since the read
if (redis.call('HGET', c.sdocs, ' mseq') or '0') ~= ARGV[5] then return reply.ok(-1) end
local now = clock.now_us()
local n = 0
for i = 1, k do
  local j = 8 + (i - 1) * 5
  local id, fp = ARGV[j], ARGV[j + 1]
  local node = msgtree.node(c, id)
  if node and node.fp == fp and redis.call('HEXISTS', c.sdocs, '=' .. id) == 0 then
    search.index_doc(c, c.sdocs, id, ARGV[j + 2], ARGV[j + 3], tonumber(ARGV[j + 4]) or now)
    n = n + 1
  end
end
redis.call('HSET', c.sdocs, ' mseq', ARGV[6])
local ttl = session.ttl(c)
if ttl > 0 and redis.call('PTTL', c.sdocs) == -1 then redis.call('EXPIRE', c.sdocs, ttl) end
-- the index lives as long as the messages it describes (an idle session's
-- end stays its end: an index outliving it would keep its cursor and ids
-- over a session of the same id made again)
local lp = redis.call('PTTL', c.morder)
if lp > 0 then redis.call('PEXPIRE', c.sdocs, lp) end
return reply.ok(n)
