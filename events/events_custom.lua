-- events_custom: publish a caller's own event (x-<name>) on the session's
-- event stream; counts as activity.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the event's type, x-<name> (validated by the sidecar)
-- ARGV[3] its data, JSON of at most 8 KiB (validated by the sidecar)
-- ARGV[4] the Idempotency-Key, or '' (the 1 000 newest are kept, in the
--   session's agent_session_event_keys ring, read only when a key is sent)
-- returns (reply.lua) {'ok', event id} published; {'dup', event id} a
--   repeat of ARGV[4]: the first publish's event id, nothing written;
--   {'missing'} when there is no such session; {'refused', ...} when the
--   user is fenced (being erased), or a key it reads or writes holds
--   another type (nothing is written).
--- @include reply
--- @include guard
--- @include ring
--- @include session
--- @include events

local RING = 'agent_session_event_keys'
local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local key, ring_key, kept = ARGV[4], nil, nil
if key ~= '' then
  -- the ring's first read checks its type (a pcall): the one check it needs
  ring_key = session.use(c, RING, 'hash', true)
  local v = redis.pcall('HMGET', ring_key, key, ' n')
  if v.err then return guard.from_error(ring_key, 'hash', v) end
  -- a tagged ring's value is "<event id>\t<slot>" (ring.lua)
  if v[1] then return session.reply(c, reply.dup(string.match(v[1], '^(.*)\t%d+$') or v[1])) end
  kept = tonumber(v[2] or '0') or 0
end
events.use(c)
refused = session.commit(c)
if refused then return refused end
local id = events.emit(c, ARGV[2], 'custom', nil, ARGV[3])
if ring_key and ring.put(ring_key, key, id, 1000, true, kept) then session.made(c, RING) end
session.finish(c)
return session.reply(c, reply.ok(id))
