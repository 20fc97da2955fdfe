-- session_context_delete: remove the session-context entry whose "id" matches.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] the entry's id
-- emits context_changed {id, deleted: true}.
-- returns (reply.lua) {'ok'} when removed, {'missing'} when there is no
--   such entry; {'index_build', 'context'} when finding it needs more
--   index steps (session_index_build, then this again); {'refused', ...}.
--- @include reply
--- @include guard
--- @include session
--- @include events
--- @include idindex
--- @include listedit

local c = idindex.lists(idindex.open(session.open(KEYS, ARGV), ARGV[2]))
local refused = session.begin(c)
if refused then return refused end
local llen = redis.pcall('LLEN', c.context)
if type(llen) == 'table' then return guard.from_error(c.context, 'list', llen) end
local pos, el = idindex.locate(c, 'context', ARGV[3], llen)
if type(pos) == 'table' then return pos end
if not pos then return reply.missing() end
events.use(c)
refused = session.commit(c)
if refused then return refused end
listedit.remove_at(c, 'context', pos, el, llen)
if llen == 1 then session.drop(c, idindex.CONTEXT) end
events.emit(c, 'context_changed', 'context', ARGV[3], '{"id":' .. cjson.encode(ARGV[3]) .. ',"deleted":true}')
session.finish(c)
return session.reply(c, reply.ok())
