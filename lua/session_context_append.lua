-- session_context_append: append one session-context entry, idempotently by
-- its "id" (through the context index), and trim the context list to
-- SESSION_MAX_ENTRIES.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the entry's id
-- ARGV[6] the entry (a JSON object holding "id")
-- emits context_changed (the entry).
-- returns (reply.lua) {'ok', started} when stored (started 1 when this
--   started the session); {'dup', stored_entry} when an entry with that id
--   exists (nothing is written then); {'index_build', 'context'} when
--   telling needs more index steps (nothing written but one step: run
--   session_index_build, then this again); {'refused', ...}.
--- @include reply
--- @include session
--- @include events
--- @include idindex

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'keep', { c.context, 'list' }, { c.ctx_index, 'hash' })
if refused then return refused end
local id, entry = ARGV[5], ARGV[6]
local pos, existing = idindex.locate(c, 'context', id)
if type(pos) == 'table' then return pos end
if pos then return reply.dup(existing) end
local newlen = redis.call('RPUSH', c.context, entry)
idindex.append(c, 'context', id, entry, newlen)
idindex.trim(c, c.context, newlen, 'context')
events.emit(c, 'context_changed', 'context', id, entry)
local _, started = session.finish_write(c, false, newlen == 1)
return reply.ok(started and 1 or 0)
