--! prelude: session_lib
-- session_append: append one Q&A entry to the session, idempotently by qa_id,
-- trim to SESSION_MAX_ENTRIES, slide the TTL of every key of the session and
-- record the activity, all at once.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] qa_id
-- ARGV[6] the entry, as Cognee's json.dumps writes it
-- emits entry_appended (the entry).
-- returns {1} when stored ({2} when this started the session);
--   {0, stored_entry} when the session already held qa_id (a retried
--   append): nothing is written then; {'index_build', 'qa'} when telling
--   whether it holds qa_id needs more than one step of indexing (nothing
--   written but that step: run session_index_build, then this again).
local refused = guard('keep', { K_ENTRIES, 'list' }, { K_INDEX, 'hash' })
if refused then return refused end
local qa_id, entry = ARGV[5], ARGV[6]

local pos, existing = locate('qa', qa_id)
if type(pos) == 'table' then return pos end
if pos then return { 0, existing } end

local newlen = redis.call('RPUSH', K_ENTRIES, entry)
index_append('qa', qa_id, entry, newlen)
local removed = trim(K_ENTRIES, newlen, 'qa')

emit('entry_appended', 'entry', qa_id, entry)
local _, started = finish_write(false, newlen == 1, newlen - removed, newlen == 1)
return { stored_flag(started) }
