-- messages_clear: remove every message and compaction of the session (its
-- message keys: O(1) commands, Redis frees them), keeping the record, usage
-- and Q&A entries. The ring of Idempotency-Keys and transactions' operation
-- ids goes too (it lives in the tree's hash): a key's messages are all
-- gone, so its append would be made again anyway, and a cleared session
-- applies an operation id anew (the OpenAI Agents SDK's clear_session).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- Emits message_deleted {cleared: true, count}.
-- returns (reply.lua) {'ok', number of messages removed}; {'missing'} for
--   no such session; {'refused', ...}.
--- @include reply
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local refused = msgtree.begin(c)
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local count = c.count
if count == 0 and not session.has(c, msgtree.MCOMP) and not session.has(c, msgtree.MTREE) then
  return session.reply(c, reply.ok(0)) -- nothing to clear: no write, no event
end
events.use(c)
refused = session.commit(c)
if refused then return refused end
redis.call('UNLINK', c.msgs, c.mtree, c.mkids, c.morder, c.mcomp)
for _, p in ipairs({ msgtree.MSGS, msgtree.MTREE, msgtree.MKIDS, msgtree.MORDER, msgtree.MCOMP }) do
  session.drop(c, p)
end
if session.has(c, search.DOCS) then
  c.sdocs = session.key(c, search.DOCS)
  search.unindex_all(c, c.sdocs)
end
local fields = msgtree.leaf_fields(c, nil, 0)
fields[#fields + 1], fields[#fields + 2] = 'msg_keys', '0'
events.emit(c, 'message_deleted', 'message', nil, '{"cleared":true,"count":' .. msgtree.fmt_int(count) .. '}')
session.finish(c, fields)
return session.reply(c, reply.ok(count))
