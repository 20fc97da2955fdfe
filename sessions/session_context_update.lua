-- session_context_update: shallow-merge fields into the session-context entry
-- whose "id" matches, as Cognee's update_session_context_entry does, keeping
-- the bytes of the fields not named.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] the entry's id
-- ARGV[4] the fields to merge (a JSON object)
-- emits context_changed (the updated entry).
-- returns (reply.lua) {'ok', updated entry}; {'missing'} when there is no
--   such entry; {'index_build', 'context'} when finding it needs more
--   index steps (session_index_build, then this again); {'refused', ...}.
--- @include reply
--- @include json
--- @include session
--- @include events
--- @include idindex

local c = idindex.open(session.open(KEYS, ARGV), ARGV[2])
local refused = session.begin(c)
if refused then return refused end
local found = idindex.locate_new(c, 'context', ARGV[3], true)
if found.answer then return found.answer end
if not found.dup then return reply.missing() end
local updated = json.merge_object(found.dup, ARGV[4])
events.use(c)
refused = session.commit(c)
if refused then return refused end
redis.call('LSET', c.context, found.pos, updated)
idindex.touch(c, 'context', found.pos, updated)
events.emit(c, 'context_changed', 'context', ARGV[3], updated)
session.finish(c)
return session.reply(c, reply.ok(updated))
