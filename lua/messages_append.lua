-- messages_append: append one message, or several chained in order (each
-- the parent of the next), all or nothing; the latest leaf becomes the
-- last of them. Counts as activity (finish_write).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] '1' when ARGV[6] is the latest leaf the caller expects (If-Match;
--   '' = none), else '0'
-- ARGV[7] the first message's parent: 'latest' (the latest leaf, or a new
--   root when there is none), 'root' (a new root) or 'id' (ARGV[8])
-- ARGV[8] the parent's id for 'id'
-- ARGV[9] SESSION_MAX_MESSAGES
-- ARGV[10] the Idempotency-Key, or '' (the 1 000 newest are kept)
-- ARGV[11] SESSION_COMPACT_AFTER_TOKENS (0 = never)
-- ARGV[12] the answer's byte cap for a repeat by Idempotency-Key (its
--   stored messages are answered while within it, then 'truncated')
-- ARGV[13..] per message, six values: id, fingerprint (of the fields a
--   retry must repeat), tokens, body (the message's JSON object without
--   parent_id and created_at, which this script appends), and for the
--   search index its terms ("term tf ...", '' = not indexed) and length
-- emits message_appended for each stored message (messages.append), and
-- compaction_suggested when the latest path (as read, with the frozen
-- system prompt) passes ARGV[11] tokens.
-- returns (reply.lua) {'ok', 'stored', message...} stored ('started'
--   when this started the session), followed by 'index_pending' when the
--   messages were sent without their search documents (the spec '?!') for
--   a user who has an index, or the write dropped the session's index as
--   foreign (search.current); {'dup', message...} the stored
--   messages of a retry (the same ids with the same fields, or the same
--   Idempotency-Key, then within ARGV[12] bytes and ending 'truncated'
--   when cut): nothing written; and, with nothing written,
--   {'ok', 'leaf_moved', the latest leaf ('' = none)} (If-Match),
--   {'ok', 'unknown_parent', ARGV[8]}, {'refused', code, text} for
--   'id_conflict' (an id held with other fields), 'session_full' and
--   'key_wrong_type' (a key or record field of the wrong type).
--- @include session
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local batch = {}
for i = 13, #ARGV, 6 do
  batch[#batch + 1] = { id = ARGV[i], fp = ARGV[i + 1], tokens = tonumber(ARGV[i + 2]), body = ARGV[i + 3],
    spec = ARGV[i + 4], len = tonumber(ARGV[i + 5]) }
end
local if_match
if ARGV[5] == '1' then if_match = ARGV[6] end
return messages.append(c, batch, ARGV[7], ARGV[8], if_match, tonumber(ARGV[9]), ARGV[10], tonumber(ARGV[11]),
  tonumber(ARGV[12]))
