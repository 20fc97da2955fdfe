-- adk_create: create ADK session (app, u, s) (module adk) on the sidecar
-- session u/<sidecar_id(app, s)> (adk.lua): its ADK record, its initial
-- state (session keys, and the `user:` and `app:` keys taken out of it, as
-- ADK's persistent services do), its place in the user's list of the
-- app's sessions and in the app's index across users (and a pruning of
-- that index), a `status` event, then the session's bookkeeping.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] app name
-- ARGV[3] the app state's key ('' on Cluster: adk_app.lua writes it)
-- ARGV[4] ADK_MAX_SESSIONS (the user's sessions of one app)
-- ARGV[5] ADK_MAX_STATE_BYTES (each of session, user and app state)
-- ARGV[6] keys of each state at most (adk.MaxStateKeys)
-- ARGV[7] the ADK session id
-- ARGV[8..] the initial state's triples (adk.lua)
-- emits status {"status":"started"}.
-- returns (reply.lua) {'ok', created ms}; {'refused', 'session_exists',
--   text} the session is an ADK session already; {'refused',
--   'too_many_sessions', text}; {'refused', 'state_too_big', text};
--   {'refused', 'key_wrong_type', text} (a key it reads or writes holds
--   another type, or the record is not what the core keeps); {'refused',
--   ...} when the user is fenced: nothing written when refused (but the
--   members of sessions gone that a full list held).
-- Bounded: the user's list holds at most ADK_MAX_SESSIONS members (a full
--   one is walked once), the state at most 1 000 keys (the sidecar's
--   check), the app index's pruning examines adk.PRUNE members.
--- @include reply
--- @include guard
--- @include session
--- @include events
--- @include adk

local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused then return refused end
local app = ARGV[2]
local k = adk.keys(c, app, ARGV[3], ARGV[7])
local had
had, refused = guard.read('HGET', k.rec, 'hash', 'app')
if refused then return refused end
if had then
  return reply.refused('session_exists', 'session ' .. k.sid .. ' of user ' .. c.uid .. ' of app ' .. had .. ' exists; nothing was changed')
end
local n
n, refused = guard.read('ZCARD', k.index, 'zset')
if refused then return refused end
local sample
sample, refused = guard.read('ZRANDMEMBER', k.apps.created, 'zset', adk.PRUNE)
refused = refused or adk.check_apps(k)
if refused then return refused end
local d = adk.deltas(ARGV, 8)
local sz
sz, refused = adk.sizes(k, d, tonumber(ARGV[5]), tonumber(ARGV[6]), true)
if refused then return refused end
-- the list holds at most ARGV[4] sessions: members whose session has gone
-- (expired) do not count, and go, when it is full (a walk of at most that
-- many, once)
local max, dead = tonumber(ARGV[4]), {}
if n >= max then
  for _, sid in ipairs(redis.call('ZRANGE', k.index, 0, max - 1)) do
    if redis.call('EXISTS', adk.record(c, app, c.uid, sid)) == 0 then dead[#dead + 1] = sid end
  end
end
local function drop_dead()
  for _, sid in ipairs(dead) do
    redis.call('ZREM', k.index, sid)
    adk.unlist(k.apps, sid .. ' ' .. c.uid)
  end
end
if n - #dead >= max then
  drop_dead() -- no member of the user's: nothing the user sees changes
  return reply.refused('too_many_sessions', 'user ' .. c.uid .. ' has ' .. max .. ' sessions of app ' .. app
    .. ' (ADK_MAX_SESSIONS); delete one first; nothing was changed')
end
session.use(c, adk.RECORD, 'hash', true)
session.keep(c, k.index)
if n - #dead == 0 then session.user_made(c, k.index) end
adk.declare(c, k, sz)
events.use(c)
refused = session.commit(c)
if refused then return refused end

drop_dead()
local t = session.ttl(c)
local ms = string.format('%d', math.floor(session.now(c) / 1000))
redis.call('HSET', k.rec, 'app', app, 'created', ms, 'last_update', ms, 'n', '0')
adk.write(k, d, sz, t)
local last = redis.call('ZRANGE', k.index, -1, -1, 'WITHSCORES')
redis.call('ZADD', k.index, (tonumber(last[2]) or 0) + 1, k.sid)
adk.prune(c, app, k, sample)
adk.list(k, ms, ms, t, true)
events.emit(c, 'status', 'state', nil, '{"status":"started"}')
session.finish(c)
return session.reply(c, reply.ok(ms))
