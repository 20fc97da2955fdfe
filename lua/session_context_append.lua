--! prelude: session_lib
-- session_context_append: append one session-context entry, idempotently by
-- its "id", and trim the context list to SESSION_MAX_ENTRIES.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the entry's id
-- ARGV[6] the entry (a JSON object holding "id")
-- emits context_changed (the entry).
-- returns {1} when stored ({2} when this started the
--   session); {0, stored_entry} when an entry with that id exists (nothing
--   is written then).
local refused = guard('keep', { K_CONTEXT, 'list' })
if refused then return refused end
local pos, existing = find_by_id(K_CONTEXT, 'id', ARGV[5])
if pos then return { 0, existing } end
local created = redis.call('RPUSH', K_CONTEXT, ARGV[6]) == 1
trim(K_CONTEXT)
emit('context_changed', 'context', ARGV[5], ARGV[6])
local _, started = finish_write(false, created)
return { stored_flag(started) }
