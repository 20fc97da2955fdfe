-- registry_active_end: end, as completed, the session start-or-reuse would
-- reuse: the user's most recently active running session whose metadata
-- holds every pair of match, when it is not abandoned.
-- KEYS[1] the record of any session of the user (lib/session.lua);
--   nothing is written to that session
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_ABANDON_AFTER_SECONDS in µs
-- ARGV[3] '1' when ARGV[4] is a human summary, else '0'
-- ARGV[5] match: a flat JSON string map, or ''
-- emits the ended session's status event.
-- returns (reply.lua) {'ok', session_id} the session it ended; {'missing'}
--   when there is none (nothing written but the expired sessions it met
--   dropped from the metadata index it read); {'refused',
--   'key_wrong_type', text} (nothing written) when a key it would write
--   holds another type; {'refused', ...} when the user is fenced.
--- @include reply
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local match = nil
if ARGV[5] ~= '' then match = cjson.decode(ARGV[5]) end
local cutoff = session.now(c) - tonumber(ARGV[2]) -- before session.at: its contexts share the time
local found, gone, refused = registry.candidates(c, match, 1)
if refused then return refused end
if #found == 0 or found[1].last < cutoff then
  if not gone.user or #gone == 0 then return reply.missing() end
  refused = session.begin(c) or registry.drop_check(gone)
  if refused then return refused end
  registry.drop_expired(c, gone)
  return reply.missing()
end
-- the session ended: every check before the first write (Redis does not
-- roll back)
local ended = found[1].c
refused = session.begin(ended) or registry.drop_check(gone)
if refused then return refused end
events.use(ended)
refused = session.commit(ended, { status = 'completed' })
if refused then return refused end
registry.drop_expired(c, gone)
local summary = nil
if ARGV[3] == '1' then summary = ARGV[4] end
registry.end_session(ended, 'completed', summary, false)
return reply.ok(found[1].sid)
