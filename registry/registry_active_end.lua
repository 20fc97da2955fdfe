-- registry_active_end: end, as completed, the session start-or-reuse would
-- reuse: the user's most recently active running session whose metadata
-- holds every pair of match, when it is not abandoned.
-- KEYS[1..15] any session's keys of the user (session.lua); nothing is
--   written to that session unless it is the one ended
-- ARGV[1..4] TTL, max entries, user_id, that session_id (session.lua)
-- ARGV[5] SESSION_ABANDON_AFTER_SECONDS in µs
-- ARGV[6] '1' when ARGV[7] is a human summary, else '0'
-- ARGV[8] match: a flat JSON string map, or ''
-- returns {'ok', session_id} the session it ended; {'missing'} when there
--   is none (nothing written but the expired sessions it met dropped from
--   the metadata index it read); {'refused', 'key_wrong_type', text}
--   (nothing written) when a key it would write holds another type.
--- @include reply
--- @include clock
--- @include session
--- @include registry

local c = session.open(KEYS, ARGV)
local match = nil
if ARGV[8] ~= '' then match = cjson.decode(ARGV[8]) end
local found, gone = registry.candidates(c, match, 1)
if #found == 0 or found[1].last < clock.now_us() - tonumber(ARGV[5]) then
  local refused = registry.drop_expired(c, gone)
  if refused then return refused end
  return reply.missing()
end
-- the session ended, found[1].c: every check before the first write (Redis
-- does not roll back)
local ended = found[1].c
local refused = session.guard(ended, 'move')
if refused then return refused end
refused = registry.drop_expired(c, gone)
if refused then return refused end
local summary = nil
if ARGV[6] == '1' then summary = ARGV[7] end
registry.end_session(ended, 'completed', summary, false)
return reply.ok(found[1].sid)
