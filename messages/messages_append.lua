-- messages_append: append one message, or several chained in order (each
-- the parent of the next), all or nothing; the latest leaf becomes the
-- last of them. Counts as activity (finish_write).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] '1' when ARGV[3] is the latest leaf the caller expects (If-Match;
--   '' = none), else '0'
-- ARGV[4] the first message's parent: 'latest' (the latest leaf, or a new
--   root when there is none), 'root' (a new root) or 'id' (ARGV[5])
-- ARGV[5] the parent's id for 'id'
-- ARGV[6] SESSION_MAX_MESSAGES
-- ARGV[7] the Idempotency-Key, or '' (the 1 000 newest are kept)
-- ARGV[8] SESSION_COMPACT_AFTER_TOKENS (0 = never)
-- ARGV[9] the answer's byte cap for a repeat by Idempotency-Key (its
--   stored messages are answered while within it, then 'truncated')
-- ARGV[10..] per message, six values: id, fingerprint (of the fields a
--   retry must repeat), tokens, body (the message's JSON object without
--   parent_id and created_at, which this script appends), and for the
--   search index its terms ("term tf ...", '' = not indexed) and length
-- emits one message_appended for the stored messages (messages.append:
-- the message, or a range of several), and
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
-- Redis commands, one message to an existing session within the grain:
-- the marker and the record (msgtree.begin), the tree (the message's id,
-- its parent and the parent's jumps, the ring's entry: messages.append),
-- TIME, then the tree, the message, its child and order entries, and the
-- record.
--- @include session
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local refused = msgtree.begin(c)
if refused then return refused end
local batch = {}
for i = 10, #ARGV, 6 do
  batch[#batch + 1] = { id = ARGV[i], fp = ARGV[i + 1], tokens = tonumber(ARGV[i + 2]), body = ARGV[i + 3],
    spec = ARGV[i + 4], len = tonumber(ARGV[i + 5]) }
end
local if_match
if ARGV[2] == '1' then if_match = ARGV[3] end
return session.reply(c, messages.append(c, batch, ARGV[4], ARGV[5], if_match, tonumber(ARGV[6]), ARGV[7],
  tonumber(ARGV[8]), tonumber(ARGV[9])))
