-- adk_append: ADK's appendEvent (module adk), atomic: the event and its
-- state delta together, or nothing. Refused as a whole when the caller's
-- copy of the session is stale (ADK's check: the stored last update time is
-- newer than the caller's). An event whose id the session holds replaces
-- it in place (ADK 2.x); a new one is appended. The session's last update
-- time becomes the event's timestamp, its place in the app's index across
-- users follows; the session's record and TTLs follow
-- (session.finish_write) and an `adk_event` event carries it. The
-- sidecar session is the ADK session's (lib/adk.lua's sidecar_id).
-- KEYS[1..15] the session's keys (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] app name
-- ARGV[6] the app state's key ('' on Cluster: the `app:` delta is then
--         answered back for adk_app.lua, not written here)
-- ARGV[7] the caller's last update time (a number)
-- ARGV[8] the event's timestamp (a number)
-- ARGV[9] the event's id ('' none: always appended)
-- ARGV[10] the event (JSON text, stored as sent)
-- ARGV[11] ADK_MAX_EVENTS
-- ARGV[12] ADK_MAX_STATE_BYTES
-- ARGV[13] keys of each state at most (adk.MaxStateKeys)
-- ARGV[14] the ADK session id
-- ARGV[15..] the state delta's triples (lib/adk.lua; no `temp:` key)
-- returns {'ok', index, replaced (0/1), app delta pending (0/1)};
--   {'missing'} no ADK session of this app; {'refused', 'stale_session',
--   text}; {'refused', 'session_full', text}; {'refused', 'state_too_big',
--   text}; {'refused', 'key_wrong_type', text}: nothing written.
--- @include reply
--- @include session
--- @include events
--- @include adk

local c = session.open(KEYS, ARGV)
local app = ARGV[5]
local k = adk.keys(c, app, ARGV[6], ARGV[14])
local checks = { { k.rec, 'hash' }, { k.state, 'hash' }, { k.events, 'hash' }, { k.user, 'hash' } }
for _, o in ipairs(adk.ORDERS) do checks[#checks + 1] = { k.apps[o], 'zset' } end
if k.app then checks[#checks + 1] = { k.app, 'hash' } end
local refused, rec = session.guard(c, 'keep', unpack(checks))
if refused then return refused end
local r = redis.call('HMGET', k.rec, 'app', 'last_update', 'n', 'created')
if r[1] ~= app then return reply.missing() end
local stored, mine = tonumber(r[2]) or 0, tonumber(ARGV[7])
if stored > mine then
  return reply.refused('stale_session', 'the session was updated at ' .. r[2] .. ', after the caller\'s copy ('
    .. ARGV[7] .. '): read it again (getSession) and retry; nothing was changed')
end
local n, at, replaced = tonumber(r[3]) or 0, nil, 0
if ARGV[9] ~= '' then at = redis.call('HGET', k.events, 'i:' .. ARGV[9]) end
if at then
  replaced = 1
elseif n >= tonumber(ARGV[11]) then
  return reply.refused('session_full', 'session ' .. k.sid .. ' holds ' .. n .. ' events (ADK_MAX_EVENTS); nothing was changed')
end
local d = adk.deltas(ARGV, 15)
local sizes, counts = {}, {}
sizes.s, counts.s = adk.size(k.state, d.s)
sizes.u, counts.u = adk.size(k.user, d.u)
if k.app then sizes.a, counts.a = adk.size(k.app, d.a) end
for scope, b in pairs(sizes) do
  refused = adk.too_big(scope, b, counts[scope], tonumber(ARGV[12]), tonumber(ARGV[13]))
  if refused then return refused end
end
-- every check done: the writes (a key made now gets the session's TTL at once)
local kept = { k.user, k.index, k.apps.created, k.apps.asc, k.apps.desc }
if k.app and #d.a > 0 then kept[#kept + 1] = k.app end
local p = adk.pttls(kept)
local fresh = n == 0 or (#d.s > 0 and redis.call('EXISTS', k.state) == 0)
if not at then
  at = tostring(n)
  redis.call('HSET', k.rec, 'n', tostring(n + 1))
  if ARGV[9] ~= '' then redis.call('HSET', k.events, 'i:' .. ARGV[9], at) end
end
redis.call('HSET', k.events, 'e' .. at, ARGV[10], 't' .. at, ARGV[8])
redis.call('HSET', k.rec, 'last_update', ARGV[8])
adk.list(k, r[4] or '0', ARGV[8])
adk.apply(k.state, d.s, sizes.s)
adk.apply(k.user, d.u, sizes.u)
if k.app and #d.a > 0 then adk.apply(k.app, d.a, sizes.a) end
events.emit(c, 'adk_event', 'event', ARGV[9], ARGV[10])
session.finish_write(c, false, fresh, nil, false, rec)
adk.keep(kept, session.ttl(c), p)
return reply.ok(tonumber(at), replaced, (not k.app and #d.a > 0) and 1 or 0)
