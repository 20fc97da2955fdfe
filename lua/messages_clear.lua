-- messages_clear: remove every message and compaction of the session (its
-- message keys: O(1) commands, Redis frees them), keeping the record, usage
-- and Q&A entries. The ring of Idempotency-Keys and transactions' operation
-- ids goes too: a key's messages are all gone, so its append would be made
-- again anyway (keyed in lib/messages.lua), and a cleared session applies
-- an operation id anew (the OpenAI Agents SDK's clear_session).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- returns (reply.lua) {'ok', number of messages removed}; {'missing'} for
--   no such session, {'refused', 'key_wrong_type', text}: nothing written.
--- @include reply
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local refused = messages.write_checks(c)
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local count = redis.call('ZCARD', c.morder)
if count == 0 and redis.call('EXISTS', c.mcomp) == 0 and redis.call('EXISTS', c.mkeys) == 0 then
  return reply.ok(0) -- nothing to clear: no write, no event
end
redis.call('UNLINK', c.msgs, c.mtree, c.mkids, c.morder, c.mcomp, c.mkeys)
search.unindex_all(c, c.sdocs)
redis.call('HSET', c.record, 'message_count', 0)
redis.call('HDEL', c.record, 'msg_leaf')
events.emit(c, 'message_deleted', 'message', nil, '{"cleared":true,"count":' .. msgtree.fmt_int(count) .. '}')
session.finish_write(c, false, false)
return reply.ok(count)
