-- events_watch: a reader of an event stream marks the stream watched, so
-- the writes record their events (SESSION_EVENTS=watched, lib/events.lua).
-- Every reader on every pod calls it when it starts reading and then well
-- inside the grace period (events/hub.go).
-- KEYS[1] the stream's marker: agent_session_events_watch:<tag><u>:<s> or
--   agent_user_events_watch:<tag><u> ("<until ms>:<since ms>", a string)
-- ARGV[1] the grace period, ms (SESSION_EVENTS_GRACE_SECONDS): the marker
--   says "watched" until then, and the key lives as long
-- ARGV[2] user_id, ARGV[3] session_id ('' for the user's stream): a user
--   being erased is not watched (erasure.fenced), so no reader makes a key
--   naming the user again behind the erasure
-- returns (reply.lua) {'ok', since ms}: when the stream's unbroken watched
--   time began (every event since was recorded; a reader resuming from an
--   older id may have missed some); {'refused', ...} when the marker holds
--   another type or the user is being erased (nothing written).
--- @include reply
--- @include guard
--- @include clock
--- @include erasure

local uid, tail = ARGV[2], ARGV[2]
if ARGV[3] ~= '' then tail = uid .. ':' .. ARGV[3] end
-- the marker is <prefix>:<tag><tail>; no family prefix holds ':'
local from = string.find(KEYS[1], ':', 1, true) + 1
local refused = erasure.fenced({ tag = string.sub(KEYS[1], from, #KEYS[1] - #tail), uid = uid })
  or guard.check({ { KEYS[1], 'string' } })
if refused then return refused end
local now = math.floor(clock.now_us() / 1000)
local grace = tonumber(ARGV[1])
local since = now
local v = redis.call('GET', KEYS[1])
if v then
  local till, from = string.match(v, '^(%d+):(%d+)$')
  -- a marker whose time ran out (one a session's slide kept) starts anew
  if till and tonumber(till) > now then since = tonumber(from) end
end
redis.call('SET', KEYS[1], string.format('%d:%d', now + grace, since), 'PX', grace)
return reply.ok(string.format('%d', since))
