-- adk_append: ADK's appendEvent (module adk), atomic: the event and its
-- state delta together, or nothing. Refused as a whole when the caller's
-- copy of the session is stale (ADK's check: the stored last update time is
-- newer than the caller's). An event whose id the session holds replaces
-- it in place (ADK 2.x); a new one is appended. The session's last update
-- time becomes the event's timestamp, its place in the app's index across
-- users follows, an `adk_event` event carries it, then the session's
-- bookkeeping. The sidecar session is the ADK session's (adk.lua's
-- sidecar_id).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] app name
-- ARGV[3] the app state's key ('' on Cluster: the `app:` delta is then
--         answered back for adk_app.lua, not written here)
-- ARGV[4] the caller's last update time (a number)
-- ARGV[5] the event's timestamp (a number)
-- ARGV[6] the event's id ('' none: always appended)
-- ARGV[7] the event (JSON text, stored as sent)
-- ARGV[8] ADK_MAX_EVENTS
-- ARGV[9] ADK_MAX_STATE_BYTES
-- ARGV[10] keys of each state at most (adk.MaxStateKeys)
-- ARGV[11] the ADK session id
-- ARGV[12..] the state delta's triples (adk.lua; no `temp:` key)
-- emits adk_event (the event).
-- returns (reply.lua) {'ok', index, replaced (0/1), app delta pending
--   (0/1)}; {'missing'} no ADK session of this app; {'refused',
--   'stale_session', text}; {'refused', 'session_full', text}; {'refused',
--   'state_too_big', text}; {'refused', 'key_wrong_type', text} (a key it
--   reads or writes holds another type, or the record is not what the core
--   keeps); {'refused', ...} when the user is fenced: nothing written when
--   refused.
-- Redis commands, an existing session within the grain, nobody watching,
-- no delta: the record and the marker (session.begin), the ADK record,
-- the event id's index, TIME, one HSET of each of the ADK record and the
-- events, the app index's two orders, the record's HSET; each state the
-- delta changes adds its measure (HGET, HLEN, an HSTRLEN a key) and HSET.
--- @include reply
--- @include guard
--- @include session
--- @include events
--- @include adk

local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused then return refused end
local app = ARGV[2]
local k = adk.keys(c, app, ARGV[3], ARGV[11])
local r
r, refused = guard.read('HMGET', k.rec, 'hash', 'app', 'last_update', 'n', 'created')
if refused then return refused end
if r[1] ~= app then return reply.missing() end
local stored, mine = tonumber(r[2]) or 0, tonumber(ARGV[4])
if stored > mine then
  return reply.refused('stale_session', 'the session was updated at ' .. r[2] .. ', after the caller\'s copy ('
    .. ARGV[4] .. '): read it again (getSession) and retry; nothing was changed')
end
local id = ARGV[6]
local n, at, replaced = tonumber(r[3]) or 0, nil, 0
if id ~= '' then
  at, refused = guard.read('HGET', k.events, 'hash', 'i:' .. id)
  if refused then return refused end
end
if at then
  replaced = 1
elseif n >= tonumber(ARGV[8]) then
  return reply.refused('session_full', 'session ' .. k.sid .. ' holds ' .. n .. ' events (ADK_MAX_EVENTS); nothing was changed')
end
local d = adk.deltas(ARGV, 12)
local sz
sz, refused = adk.sizes(k, d, tonumber(ARGV[9]), tonumber(ARGV[10]))
if refused then return refused end
session.use(c, adk.RECORD, 'hash', true)
session.use(c, adk.EVENTS, 'hash', id ~= '')
adk.declare(c, k, sz)
events.use(c)
refused = session.commit(c)
if refused then return refused end

local ev = { 'e' .. (at or n), ARGV[7], 't' .. (at or n), ARGV[5] }
if at then
  redis.call('HSET', k.rec, 'last_update', ARGV[5])
else
  at = tostring(n)
  redis.call('HSET', k.rec, 'last_update', ARGV[5], 'n', tostring(n + 1))
  if id ~= '' then ev[#ev + 1], ev[#ev + 2] = 'i:' .. id, at end
end
redis.call('HSET', k.events, unpack(ev))
local t = session.ttl(c)
adk.list(k, r[4] or '0', ARGV[5], t, false)
adk.write(k, d, sz, t)
events.emit(c, 'adk_event', 'event', id, ARGV[7])
session.finish(c)
return session.reply(c, reply.ok(tonumber(at), replaced, (not k.app and #d.a > 0) and 1 or 0))
