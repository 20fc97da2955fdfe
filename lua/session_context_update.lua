-- session_context_update: shallow-merge fields into the session-context entry
-- whose "id" matches, as Cognee's update_session_context_entry does, keeping
-- the bytes of the fields not named.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the entry's id
-- ARGV[6] the fields to merge (a JSON object)
-- emits context_changed (the updated entry).
-- returns (reply.lua) {'ok', updated entry}; {'missing'} when there is no
--   such entry; {'index_build', 'context'} when finding it needs more
--   index steps (session_index_build, then this again); {'refused', ...}.
--- @include reply
--- @include json
--- @include session
--- @include events
--- @include idindex

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'keep', { c.context, 'list' }, { c.ctx_index, 'hash' })
if refused then return refused end
local pos, el = idindex.locate(c, 'context', ARGV[5])
if type(pos) == 'table' then return pos end
if not pos then return reply.missing() end
local updated = json.merge_object(el, ARGV[6])
redis.call('LSET', c.context, pos, updated)
idindex.touch(c, 'context', pos, updated)
events.emit(c, 'context_changed', 'context', ARGV[5], updated)
session.finish_write(c)
return reply.ok(updated)
