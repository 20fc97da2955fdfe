-- events_custom: publish a caller's own event (x-<name>) on the session's
-- event stream; counts as activity.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the event's type, x-<name> (validated by the sidecar)
-- ARGV[6] its data, JSON of at most 8 KiB (validated by the sidecar)
-- ARGV[7] the Idempotency-Key, or '' (the 1 000 newest are kept, in the
--   session's agent_session_event_keys ring)
-- returns {1, event id} published; {0, event id} a repeat of ARGV[7]: the
--   first publish's event id, nothing written; 0 when there is no such
--   session, {-1, 'wrong_type', message} when a record field it reads is
--   not what it should be (nothing is written).
--- @include ring
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local ekeys = session.key(c, 'agent_session_event_keys')
local refused = session.guard(c, 'keep', { ekeys, 'hash' })
if refused then return refused end
if not session.exists(c) then return 0 end
local bad = session.check_finish(c, nil, false)
if bad then return { -1, 'wrong_type', bad } end
local key = ARGV[7]
if key ~= '' then
  local first = ring.get(ekeys, key, true)
  if first then return { 0, first } end
end
local id = events.emit(c, ARGV[5], 'custom', nil, ARGV[6])
local created = key ~= '' and ring.put(ekeys, key, id, 1000, true)
session.finish_write(c, false, created)
return { 1, id }
