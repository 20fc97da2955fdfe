-- adk: Google ADK sessions on a sidecar session (module adk), for the
-- module's scripts (adk_*.lua): session scripts on the core's per-call
-- contract (lua/lib/session.lua), but adk_app.lua. ADK session (app, u, s)
-- is the sidecar session u/<sid>, sid = sidecar_id(app, s) (adk/keys.go's
-- SidecarSession): two apps' sessions of one id are two sidecar sessions.
-- The keys of an ADK session, besides the session's stock keys (adk/keys.go
-- registers their families):
--   adk_session:<tag><u>:<sid>  hash: app, created (ms), last_update (the
--                             last event's timestamp, as sent), n (events)
--   adk_state:<tag><u>:<sid>    hash: the session's state, "=<key>" -> JSON
--                             value, "#" -> the state's bytes
--   adk_events:<tag><u>:<sid>   hash: "e<i>" -> event JSON, "t<i>" -> its
--                             timestamp, "i:<event id>" -> i (0-based)
-- The session's three are session families: the core slides them with the
-- session and its delete removes them (session.use).
--   adk_user_state:<tag><u>:<app>  the user's `user:` state, as adk_state
--   adk_index:<tag><u>:<app>    zset: the user's sessions (ADK ids) of the
--                             app, scored by creation order
-- The user's two live as long as the user's sessions (session.keep: the
-- user's marker lists them, every slide of the user's sessions keeps them).
--   adk_app_index:<tag><app>:<order>  zsets: the app's sessions of the
--                             bucket's users, member "<s> <u>", scored by
--                             creation time (created), last update time
--                             (asc) and its negation (desc); <tag> is the
--                             user's bucket, so they share the user's slot
-- Each session's record lists the three (session.member_of): every slide of
-- each of their sessions keeps them at least as long as that session. The
-- member is "<s> <u>", not the core's "<u>:<sid>": ADK orders sessions of
-- one time by their id, so two users' ties sort by the ADK id first (and
-- the sidecar id of a long or dotted one is a hash). A delete therefore
-- leaves the member (the core removes "<u>:<sid>"): ADK's deleteSession
-- takes it out (adk_unlist.lua), the listings take out the members of
-- sessions gone that they meet, and each create examines two (prune).
--   adk_app_state:<tag'><app> the app's `app:` state, as adk_state; <tag'>
--                             is the app's own bucket on Cluster, so it is
--                             written by a second script there (adk_app.lua)
-- It keeps its own TTL: at least the writing session's from its last
-- change (expire_app).
-- A state delta travels as triples in ARGV: scope ('s' session, 'u' user,
-- 'a' app), key (without its prefix for u and a), value (JSON text).
--- @include reply
--- @include guard
--- @include session

-- MAX_ID is the longest id (redisstore.MaxIDLength).
local MAX_ID = 128
-- the module's families (adk/keys.go)
local RECORD = 'adk_session'
local STATE = 'adk_state'
local EVENTS = 'adk_events'
local USER_STATE = 'adk_user_state'
local INDEX = 'adk_index'
local APP_INDEX = 'adk_app_index'
-- ORDERS are the app index's orders (adk/keys.go).
local ORDERS = { 'created', 'asc', 'desc' }
-- PRUNE is how many members of the app's index a create examines.
local PRUNE = 2

-- sidecar_id is the sidecar session of ADK session s of app (see above).
local function sidecar_id(app, s)
  if not string.find(app, '.', 1, true) and #app + 1 + #s <= MAX_ID then return app .. '.' .. s end
  return 'adk-' .. redis.sha1hex(app .. '\0' .. s)
end

-- record is the ADK record of user u's session s of app (c: a context of a
-- session of u's bucket: same tag, same slot).
local function record(c, app, u, s)
  return RECORD .. ':' .. c.tag .. u .. ':' .. sidecar_id(app, s)
end

-- keys are the ADK keys of c's session for app (app_key: the app state's
-- key when this script may write it, standalone Redis only, else ''); s
-- is the session's ADK id (c.sid is the sidecar's; nil for a read).
local function keys(c, app, app_key, s)
  local k = {
    rec = session.key(c, RECORD), state = session.key(c, STATE), events = session.key(c, EVENTS),
    user = session.user_key(c, USER_STATE, app), index = session.user_key(c, INDEX, app),
    app = (app_key ~= '' and app_key) or nil,
    sid = s, member = s and (s .. ' ' .. c.uid), apps = {},
  }
  for _, o in ipairs(ORDERS) do k.apps[o] = session.bucket_key(c, APP_INDEX, app .. ':' .. o) end
  return k
end

-- check_apps refuses an app index key of another type (nil: none).
local function check_apps(k)
  local checks = {}
  for _, o in ipairs(ORDERS) do checks[#checks + 1] = { k.apps[o], 'zset' } end
  return guard.check(checks)
end

-- file declares, before session.commit, that the session is a member of
-- the app's index (its record lists the three keys: session.member_of).
local function file(c, k)
  for _, o in ipairs(ORDERS) do session.member_of(c, k.apps[o], false) end
end

-- add runs ZADD on app index key (args: its options, score, member) and
-- gives a key it made (the member is its only one) TTL t (0: none); the
-- slides of the sessions filed in it keep it from then on (file). Returns
-- ZADD's answer.
local function add(key, t, ...)
  local n = redis.call('ZADD', key, ...)
  if n == 1 and t > 0 and redis.call('ZCARD', key) == 1 then redis.call('EXPIRE', key, t) end
  return n
end

-- list files the session in the app's index by its last update time
-- (asc, desc) and by its creation time created: at its create (new; a
-- member a session of that id left is moved), or when its member was lost
-- (the index went while the session lived); t: the session's TTL, for a
-- key it makes.
local function list(k, created, last, t, new)
  local lost = add(k.apps.asc, t, tonumber(last), k.member) == 1
  add(k.apps.desc, t, -tonumber(last), k.member)
  if new then
    add(k.apps.created, t, tonumber(created), k.member)
  elseif lost then
    add(k.apps.created, t, 'NX', tonumber(created), k.member)
  end
end

-- unlist takes member "<s> <u>" out of the app's index (apps: k.apps).
local function unlist(apps, member)
  for _, o in ipairs(ORDERS) do redis.call('ZREM', apps[o], member) end
end

-- prune drops, of members sample of the app's index (PRUNE random ones,
-- read before the write's first write), those whose session is gone
-- (expired, deleted by another route, erased): dead members go at least
-- as fast as creates add members, wherever they sit.
local function prune(c, app, k, sample)
  for _, m in ipairs(sample) do
    local s, u = string.match(m, '^(%S+) (%S+)$')
    if not s or redis.call('EXISTS', record(c, app, u, s)) == 0 then unlist(k.apps, m) end
  end
end

-- deltas splits the triples of ARGV from i into {s = {k, v, ...}, u = ..., a = ...}.
local function deltas(ARGV, i)
  local d = { s = {}, u = {}, a = {} }
  while i + 2 <= #ARGV do
    local t = d[ARGV[i]]
    t[#t + 1] = ARGV[i + 1]
    t[#t + 1] = ARGV[i + 2]
    i = i + 3
  end
  return d
end

-- size measures state hash key after setting pairs (k, v, ...): {bytes,
-- keys, fresh}: its stored total less each replaced value plus each new
-- one; its keys then when pairs add one (else 0: a state past the bound
-- may still change the keys it holds); fresh when the key does not exist
-- yet. Its first command is a pcall: nil and the refusal of a key of
-- another type. One HSTRLEN per pair: bounded by the delta.
local function size(key, pairs)
  local total, refused = guard.read('HGET', key, 'hash', '#')
  if refused then return nil, refused end
  total = tonumber(total or '0') or 0
  local n, added = redis.call('HLEN', key), 0
  local fresh = n == 0
  if n > 0 then n = n - 1 end -- the '#' field
  for i = 1, #pairs, 2 do
    local f = '=' .. pairs[i]
    local old = redis.call('HSTRLEN', key, f) -- 0: absent (a value is never empty)
    if old > 0 then total = total - old - #f else added = added + 1 end
    total = total + #f + #pairs[i + 1]
  end
  return { bytes = total, keys = added > 0 and n + added or 0, fresh = fresh }
end

-- too_big is the refusal of a state of scope whose size would pass
-- max_bytes or max_keys; nil when it fits.
local function too_big(scope, sz, max_bytes, max_keys)
  local name = ({ s = 'session', u = 'user', a = 'app' })[scope]
  if sz.bytes > max_bytes then
    return reply.refused('state_too_big', 'the ' .. name .. ' state would be ' .. sz.bytes .. ' bytes; at most '
      .. max_bytes .. ' (ADK_MAX_STATE_BYTES); nothing was changed')
  end
  if sz.keys > max_keys then
    return reply.refused('state_too_big', 'the ' .. name .. ' state would hold ' .. sz.keys .. ' keys; at most '
      .. max_keys .. '; nothing was changed')
  end
end

-- sizes measures the states delta d changes (k: keys; the app's only when
-- k.app), refusing one of another type or past a bound: {s =, u =, a =}
-- (nil: unchanged), or nil and the refusal. A state the delta leaves alone
-- is not read; with all, its type is checked (a create, whose answer
-- reads them).
local function sizes(k, d, max_bytes, max_keys, all)
  local out, checks = {}, {}
  for _, sk in ipairs({ { 's', k.state }, { 'u', k.user }, { 'a', k.app } }) do
    local scope, key = sk[1], sk[2]
    if key and #d[scope] > 0 then
      local sz, refused = size(key, d[scope])
      refused = refused or too_big(scope, sz, max_bytes, max_keys)
      if refused then return nil, refused end
      out[scope] = sz
    elseif key and all then
      checks[#checks + 1] = { key, 'hash' }
    end
  end
  local refused = guard.check(checks)
  if refused then return nil, refused end
  return out
end

-- apply sets pairs on state hash key whose new size is sz (nil: unchanged).
local function apply(key, pairs, sz)
  if not sz then return end
  local args = { '#', tostring(sz.bytes) }
  for i = 1, #pairs, 2 do
    args[#args + 1] = '=' .. pairs[i]
    args[#args + 1] = pairs[i + 1]
  end
  redis.call('HSET', key, unpack(args))
end

-- expire_app gives the app state key, just written (fresh: made now), at
-- least TTL t (0: none): the app state's own policy, whoever writes it.
local function expire_app(key, t, fresh)
  if t == 0 then
    redis.call('PERSIST', key)
  elseif fresh then
    redis.call('EXPIRE', key, t)
  else
    redis.call('EXPIRE', key, t, 'GT')
  end
end

-- declare declares, before session.commit, the keys a write of states sz
-- writes: the session's state (a family), the user's (kept), and the
-- session's place in the app's index; a kept key the write makes anew
-- gets its TTL (session.user_made), so does a state hash another program
-- removed (session.made).
local function declare(c, k, sz)
  if sz.s then
    session.use(c, STATE, 'hash', true)
    if sz.s.fresh then session.made(c, STATE) end
  end
  if sz.u then
    session.keep(c, k.user)
    if sz.u.fresh then session.user_made(c, k.user) end
  end
  file(c, k)
end

-- write applies delta d of sizes sz (its app: part when this script may
-- write it: k.app) with t the session's TTL.
local function write(k, d, sz, t)
  apply(k.state, d.s, sz.s)
  apply(k.user, d.u, sz.u)
  if sz.a then
    apply(k.app, d.a, sz.a)
    expire_app(k.app, t, sz.a.fresh)
  end
end

-- state reads a state hash as {key, value, ...} (the '#' field left out),
-- or nil and the refusal of a key of another type. One HGETALL is bounded:
-- a state holds at most MaxStateKeys (1 000) keys and ADK_MAX_STATE_BYTES,
-- both checked by every write (too_big).
local function state(key)
  local all, refused = guard.read('HGETALL', key, 'hash')
  if refused then return nil, refused end
  local out = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 1) == '=' then
      out[#out + 1] = string.sub(all[i], 2)
      out[#out + 1] = all[i + 1]
    end
  end
  return out
end

return {
  RECORD = RECORD, EVENTS = EVENTS, ORDERS = ORDERS, PRUNE = PRUNE,
  sidecar_id = sidecar_id, record = record, keys = keys, check_apps = check_apps, file = file,
  list = list, unlist = unlist, prune = prune, deltas = deltas, size = size, too_big = too_big, sizes = sizes,
  apply = apply, expire_app = expire_app, declare = declare, write = write, state = state,
}
