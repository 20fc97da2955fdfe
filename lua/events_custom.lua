-- events_custom: publish a caller's own event (x-<name>) on the session's
-- event stream; counts as activity.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the event's type, x-<name> (validated by the sidecar)
-- ARGV[6] its data, JSON of at most 8 KiB (validated by the sidecar)
-- ARGV[7] the Idempotency-Key, or '' (the 1 000 newest are kept, in the
--   session's agent_session_event_keys ring)
-- returns (reply.lua) {'ok', event id} published; {'dup', event id} a
--   repeat of ARGV[7]: the first publish's event id, nothing written;
--   {'missing'} when there is no such session; {'refused', ...} when a
--   record field it reads is not what it should be (nothing is written).
--- @include reply
--- @include ring
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local ekeys = session.key(c, 'agent_session_event_keys')
local refused = session.guard(c, 'keep', { ekeys, 'hash' })
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local bad = session.check_finish(c, nil, false)
if bad then return reply.bad_key(bad) end
local key = ARGV[7]
if key ~= '' then
  local first = ring.get(ekeys, key, true)
  if first then return reply.dup(first) end
end
local id = events.emit(c, ARGV[5], 'custom', nil, ARGV[6])
local created = key ~= '' and ring.put(ekeys, key, id, 1000, true)
session.finish_write(c, false, created)
return reply.ok(id)
