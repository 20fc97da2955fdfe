-- events_watch: a reader of an event stream marks the stream watched, so
-- the writes record their events (SESSION_EVENTS=watched, lib/events.lua).
-- Every reader on every pod calls it when it starts reading and then well
-- inside the grace period (events/hub.go). Not a session write: it takes
-- the keys it marks, and writes none but them.
-- KEYS[1] the user's marker agent_user_marker:<tag><sha1(u)> (a hash;
--   lib/session.lua): a session's stream is marked in its field w:<s>. A
--   fenced user (being erased) is not marked, so no reader names the user
--   again behind the erasure.
-- KEYS[2..] for a session's stream, the keys whose existence says the
--   session exists (its record, Cognee's lists): a session that does not
--   exist (deleted, expired) is not marked, so no field of the marker
--   names a deleted session
-- KEYS[2] for the user's stream, its marker agent_user_events_watch:<tag><u>
--   (a string)
-- ARGV[1] the grace period, ms (SESSION_EVENTS_GRACE_SECONDS): the mark
--   says "watched" until then, and lives at least as long
-- ARGV[2] session_id ('' for the user's stream)
-- A session's mark also drops up to PRUNE marks of other sessions whose
-- time ran out, so the marker holds about the streams watched now.
-- returns (reply.lua) {'ok', since ms}: when the stream's unbroken watched
--   time began (every event since was recorded; a reader resuming from an
--   older id may have missed some); {'missing'} when the session does not
--   exist (nothing written); {'refused', ...} when a marker holds another
--   type or the user is fenced (nothing written).
--- @include reply
--- @include guard
--- @include clock

local PRUNE = 4
local marker = KEYS[1]
local fence = redis.pcall('HGET', marker, 'fence')
if type(fence) == 'table' then return guard.from_error(marker, 'hash', fence) end
if fence then
  local code, text = string.match(fence, '^(%S+) (.*)$')
  return reply.refused(code or 'user_fenced', text or fence)
end
local now = math.floor(clock.now_us() / 1000)
local grace = tonumber(ARGV[1])

-- since_of is when the watch of mark v began: v's since while its time
-- runs, else now
local function since_of(v)
  if v then
    local till, from = string.match(v, '^(%d+):(%d+)$')
    if till and tonumber(till) > now then return tonumber(from) end
  end
  return now
end

if ARGV[2] == '' then
  local refused = guard.check({ { KEYS[2], 'string' } })
  if refused then return refused end
  local since = since_of(redis.call('GET', KEYS[2]))
  redis.call('SET', KEYS[2], string.format('%d:%d', now + grace, since), 'PX', grace)
  return reply.ok(string.format('%d', since))
end

if redis.call('EXISTS', unpack(KEYS, 2)) == 0 then return reply.missing() end
local field = 'w:' .. ARGV[2]
local since = since_of(redis.call('HGET', marker, field))
local pttl = redis.call('PTTL', marker)
redis.call('HSET', marker, field, string.format('%d:%d', now + grace, since))
-- the marker lives at least the grace period; one without expiry (a
-- session without one keeps it so) gets none
if pttl == -2 then
  redis.call('PEXPIRE', marker, grace)
elseif pttl >= 0 then
  redis.call('PEXPIRE', marker, grace, 'GT')
end
local some = redis.call('HRANDFIELD', marker, PRUNE, 'WITHVALUES')
for i = 1, #some, 2 do
  local f, v = some[i], some[i + 1]
  if f ~= field and string.sub(f, 1, 2) == 'w:' then
    local till = tonumber(string.match(v, '^(%d+)') or '')
    if not till or till <= now then redis.call('HDEL', marker, f) end
  end
end
return reply.ok(string.format('%d', since))
