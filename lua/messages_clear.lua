-- messages_clear: remove every message and compaction of the session (its
-- message keys: O(1) commands, Redis frees them; the Idempotency-Key ring
-- stays, but a key whose messages are all gone appends again: keyed in
-- lib/messages.lua), keeping the record, usage and Q&A entries.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- returns {1, number of messages removed}; {-1, 'not_found', ''} for no
--   such session; {-1, 'wrong_type', detail}; nothing written then.
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local refused = messages.write_checks(c)
if refused then return refused end
if not session.exists(c) then return { -1, 'not_found', '' } end
local count = redis.call('ZCARD', c.morder)
if count == 0 and redis.call('EXISTS', c.mcomp) == 0 then return { 1, 0 } end -- nothing to clear: no write, no event
redis.call('UNLINK', c.msgs, c.mtree, c.mkids, c.morder, c.mcomp)
search.unindex_all(c, c.sdocs)
redis.call('HSET', c.record, 'message_count', 0)
redis.call('HDEL', c.record, 'msg_leaf')
events.emit(c, 'message_deleted', 'message', nil, '{"cleared":true,"count":' .. msgtree.fmt_int(count) .. '}')
session.finish_write(c, false, false)
return { 1, count }
