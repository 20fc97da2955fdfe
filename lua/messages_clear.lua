--! prelude: messages_lib
-- messages_clear: remove every message and compaction of the session (its
-- message keys: O(1) commands, Redis frees them; the Idempotency-Key ring
-- stays, but a key whose messages are all gone appends again: keyed in
-- messages_lib.lua), keeping the record, usage and Q&A entries.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- returns {1, number of messages removed}; {-1, 'not_found', ''} for no
--   such session; {-1, 'wrong_type', detail}; nothing written then.
local refused = write_checks()
if refused then return refused end
if not session_exists() then return { -1, 'not_found', '' } end
local count = redis.call('ZCARD', K_MORDER)
if count == 0 and redis.call('EXISTS', K_MCOMP) == 0 then return { 1, 0 } end -- nothing to clear: no write, no event
redis.call('UNLINK', K_MSGS, K_MTREE, K_MKIDS, K_MORDER, K_MCOMP)
unindex_all(K_SDOCS)
redis.call('HSET', K_RECORD, 'message_count', 0)
redis.call('HDEL', K_RECORD, 'msg_leaf')
emit('message_deleted', 'message', nil, '{"cleared":true,"count":' .. fmt_int(count) .. '}')
finish_write(false, false)
return { 1, count }
