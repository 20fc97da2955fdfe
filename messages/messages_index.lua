-- messages_index: one step of the messages' catch-up (messages/index.go):
-- puts a batch of this session's messages into the search index, their
-- documents analysed by the sidecar from the messages as it read them (in
-- the order of their sequence numbers, from the cursor ' mseq' of the
-- session's index on). A message is indexed only while its tree node
-- still holds the fingerprint that read found and it has no document yet;
-- one written or deleted since is skipped (that write kept the index).
-- Not activity: the session's last activity, TTLs and events are not
-- touched (session.commit's quiet write); a new index gets the session's
-- TTL.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the cursor the read began after ('0': the first message)
-- ARGV[3] the cursor after it: the sequence number of the last message read
-- ARGV[4] k, the number of messages, then for each: id, fingerprint (its
--   node's, as read), spec ("term tf ...", '' for no searchable word),
--   length, time (µs since the epoch: the document's time, its message's
--   created_at; '' for now). The sidecar sends at most 100 messages and
--   256 terms a call.
-- returns (reply.lua) {'ok', n}: n of the k messages indexed, the others
--   skipped; {'ok', -1} when the cursor moved since the read, or the read
--   went past the session's committed messages (nothing
--   written: read again); {'refused', 'key_wrong_type', text} when a key
--   holds another type, {'refused', 'user_erasing', text} when the user is
--   being erased (nothing written).
--- @include reply
--- @include session
--- @include search
--- @include msgtree

local c = msgtree.open(session.open(KEYS, ARGV))
local k = tonumber(ARGV[4]) or 0
if #ARGV ~= 4 + k * 5 then return redis.error_reply('ERR messages_index: want 5 arguments per message') end
-- a fenced user (being erased): an index behind the erasure's scan would
-- outlive it
local refused = msgtree.begin(c)
if refused then return refused end
if not session.has(c, msgtree.MTREE) then return reply.ok(-1) end
-- the read saw sequence numbers past the committed ones: a stage's, since
-- dropped, whose numbers the next append takes again
if tonumber(ARGV[3]) > c.seq then return reply.ok(-1) end
refused = search.prepare(c, 'messages') or session.commit(c, { quiet = true })
if refused then return refused end
search.current(c, c.sdocs)
-- the index dropped (a big delete, a clear) or moved on since the read
if (redis.call('HGET', c.sdocs, ' mseq') or '0') ~= ARGV[2] then return reply.ok(-1) end
local now = session.now(c)
local n = 0
for i = 1, k do
  local j = 5 + (i - 1) * 5
  local id, fp = ARGV[j], ARGV[j + 1]
  local node = msgtree.node(c, id)
  if node and node.fp == fp and redis.call('HEXISTS', c.sdocs, '=' .. id) == 0 then
    search.index_doc(c, c.sdocs, id, ARGV[j + 2], ARGV[j + 3], tonumber(ARGV[j + 4]) or now)
    n = n + 1
  end
end
redis.call('HSET', c.sdocs, ' mseq', ARGV[3])
session.finish(c)
return reply.ok(n)
