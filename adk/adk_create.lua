-- adk_create: create ADK session (app, u, s) (module adk) on the sidecar
-- session u/<sidecar_id(app, s)> (lib/adk.lua): its ADK record, its
-- initial state (session keys, and the `user:` and `app:` keys taken out
-- of it, as ADK's persistent services do), its place in the user's list of
-- the app's sessions and in the app's index across users (and a pruning of
-- that index); the session's record and TTLs as every write
-- (session.finish_write), a `status` event.
-- KEYS[1..15] the session's keys (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] app name
-- ARGV[6] the app state's key ('' on Cluster: adk_app.lua writes it)
-- ARGV[7] ADK_MAX_SESSIONS (the user's sessions of one app)
-- ARGV[8] ADK_MAX_STATE_BYTES (each of session, user and app state)
-- ARGV[9] keys of each state at most (adk.MaxStateKeys)
-- ARGV[10] the ADK session id
-- ARGV[11..] the initial state's triples (lib/adk.lua)
-- returns {'ok', created ms}; {'refused', 'session_exists', text} the
--   session is an ADK session already (nothing written); {'refused',
--   'too_many_sessions', text}; {'refused', 'state_too_big', text};
--   {'refused', 'key_wrong_type', text} (session.guard; nothing written).
--- @include reply
--- @include session
--- @include events
--- @include adk

local c = session.open(KEYS, ARGV)
local app = ARGV[5]
local k = adk.keys(c, app, ARGV[6], ARGV[10])
local checks = { { k.rec, 'hash' }, { k.state, 'hash' }, { k.events, 'hash' }, { k.user, 'hash' }, { k.index, 'zset' } }
for _, o in ipairs(adk.ORDERS) do checks[#checks + 1] = { k.apps[o], 'zset' } end
if k.app then checks[#checks + 1] = { k.app, 'hash' } end
local refused, rec = session.guard(c, 'keep', unpack(checks))
if refused then return refused end
local had = redis.call('HGET', k.rec, 'app')
if had then
  return reply.refused('session_exists', 'session ' .. k.sid .. ' of user ' .. c.uid .. ' of app ' .. had .. ' exists; nothing was changed')
end
-- the index holds at most ARGV[7] sessions: members whose session has gone
-- (expired) are dropped when it is full, a bounded walk of at most that many
local max = tonumber(ARGV[7])
if redis.call('ZCARD', k.index) >= max then
  for _, sid in ipairs(redis.call('ZRANGE', k.index, 0, max - 1)) do
    if redis.call('EXISTS', adk.record(c, app, c.uid, sid)) == 0 then
      redis.call('ZREM', k.index, sid)
      adk.unlist(k.apps, sid .. ' ' .. c.uid)
    end
  end
  if redis.call('ZCARD', k.index) >= max then
    return reply.refused('too_many_sessions', 'user ' .. c.uid .. ' has ' .. max .. ' sessions of app ' .. app
      .. ' (ADK_MAX_SESSIONS); delete one first; nothing was changed')
  end
end
local d = adk.deltas(ARGV, 11)
local sizes, counts = {}, {}
sizes.s, counts.s = adk.size(k.state, d.s)
sizes.u, counts.u = adk.size(k.user, d.u)
if k.app then sizes.a, counts.a = adk.size(k.app, d.a) end
for scope, n in pairs(sizes) do
  refused = adk.too_big(scope, n, counts[scope], tonumber(ARGV[8]), tonumber(ARGV[9]))
  if refused then return refused end
end
local kept = { k.index, k.user, k.apps.created, k.apps.asc, k.apps.desc }
if k.app and #d.a > 0 then kept[#kept + 1] = k.app end
local p = adk.pttls(kept)
local t = redis.call('TIME')
local ms = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('HSET', k.rec, 'app', app, 'created', ms, 'last_update', ms, 'n', '0')
adk.apply(k.state, d.s, sizes.s)
adk.apply(k.user, d.u, sizes.u)
if k.app then adk.apply(k.app, d.a, sizes.a) end
local last = redis.call('ZRANGE', k.index, -1, -1, 'WITHSCORES')
redis.call('ZADD', k.index, (tonumber(last[2]) or 0) + 1, k.sid)
adk.prune(c, app, k)
adk.list(k, ms, ms)
events.emit(c, 'status', 'state', nil, '{"status":"started"}')
session.finish_write(c, false, true, nil, false, rec)
adk.keep(kept, session.ttl(c), p)
return reply.ok(ms)
