-- session_context_append: append one session-context entry, idempotently by
-- its "id" (through the context index), and trim the context list to
-- SESSION_MAX_ENTRIES.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] the entry's id
-- ARGV[4] the entry (a JSON object holding "id")
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
--- @include listedit

local c = idindex.lists(idindex.open(session.open(KEYS, ARGV), ARGV[2]))
local refused = session.begin(c)
if refused then return refused end
local id, entry = ARGV[3], ARGV[4]
local found = idindex.locate_new(c, 'context', id)
if found.answer then return found.answer end
if found.dup then return session.reply(c, reply.dup(found.dup)) end
session.use(c, idindex.CONTEXT, 'list', true)
session.use(c, idindex.CTX_INDEX, 'hash', true)
events.use(c)
refused = session.commit(c)
if refused then return refused end
local newlen = redis.call('RPUSH', c.context, entry)
if newlen == 1 then session.made(c, idindex.CONTEXT) end
idindex.appended(c, 'context', id, entry, newlen, found)
listedit.trim(c, c.context, newlen, 'context')
events.emit(c, 'context_changed', 'context', id, entry)
local started = session.finish(c)
return session.reply(c, reply.ok(started and 1 or 0))
