-- session_context_delete: remove the session-context entry whose "id" matches.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the entry's id
-- emits context_changed {id, deleted: true}.
-- returns (reply.lua) {'ok'} when removed, {'missing'} when there is no
--   such entry; {'index_build', 'context'} when finding it needs more
--   index steps (session_index_build, then this again); {'refused', ...}.
--- @include reply
--- @include session
--- @include events
--- @include idindex

local c = session.open(KEYS, ARGV)
local refused = session.guard(c, 'keep', { c.context, 'list' }, { c.ctx_index, 'hash' })
if refused then return refused end
local llen = redis.call('LLEN', c.context)
local pos, el = idindex.locate(c, 'context', ARGV[5], llen)
if type(pos) == 'table' then return pos end
if not pos then return reply.missing() end
idindex.remove_at(c, 'context', pos, el, llen)
events.emit(c, 'context_changed', 'context', ARGV[5], '{"id":' .. cjson.encode(ARGV[5]) .. ',"deleted":true}')
session.finish_write(c)
return reply.ok()
