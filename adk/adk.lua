-- adk: Google ADK sessions on a sidecar session (module adk). ADK session
-- (app, u, s) is the sidecar session u/<sid>, sid = sidecar_id(app, s)
-- (adk/keys.go's SidecarSession): two apps' sessions of one id are two
-- sidecar sessions. The keys of an ADK session, besides the session's
-- stock keys:
--   adk_session:<tag><u>:<sid>  hash: app, created (ms), last_update (the
--                             last event's timestamp, as sent), n (events)
--   adk_state:<tag><u>:<sid>    hash: the session's state, "=<key>" -> JSON
--                             value, "#" -> the state's bytes
--   adk_events:<tag><u>:<sid>   hash: "e<i>" -> event JSON, "t<i>" -> its
--                             timestamp, "i:<event id>" -> i (0-based)
--   adk_user_state:<tag><u>:<app>  the user's `user:` state, as adk_state
--   adk_index:<tag><u>:<app>    zset: the user's sessions (ADK ids) of the
--                             app, scored by creation order
--   adk_app_index:<tag><app>:<order>  zsets: the app's sessions of the
--                             bucket's users, member "<s> <u>", scored by
--                             creation time (created), last update time
--                             (asc) and its negation (desc); <tag> is the
--                             user's bucket, so they share the user's slot
--   adk_app_state:<tag'><app> the app's `app:` state, as adk_state; <tag'>
--                             is the app's own bucket on Cluster, so it is
--                             written by a second script there (adk_app.lua)
-- A state delta travels as triples in ARGV: scope ('s' session, 'u' user,
-- 'a' app), key (without its prefix for u and a), value (JSON text).
--- @include reply
--- @include session
--- @include meta

-- MAX_ID is the longest id (redisstore.MaxIDLength).
local MAX_ID = 128

-- sidecar_id is the sidecar session of ADK session s of app (see above).
local function sidecar_id(app, s)
  if not string.find(app, '.', 1, true) and #app + 1 + #s <= MAX_ID then return app .. '.' .. s end
  return 'adk-' .. redis.sha1hex(app .. '\0' .. s)
end

-- record is the ADK record of user u's session s of app (c: a context of a
-- session of u's bucket: same tag, same slot).
local function record(c, app, u, s)
  return 'adk_session:' .. c.tag .. u .. ':' .. sidecar_id(app, s)
end

-- ORDERS are the app index's orders (adk/keys.go).
local ORDERS = { 'created', 'asc', 'desc' }

-- keys are the ADK keys of c's session for app (app_key: the app state's
-- key when this script may write it, standalone Redis only, else ''); s
-- is the session's ADK id (c.sid is the sidecar's; nil for a read).
local function keys(c, app, app_key, s)
  local id = c.tag .. c.gid
  local u = c.tag .. c.uid .. ':' .. app
  local k = {
    rec = 'adk_session:' .. id, state = 'adk_state:' .. id, events = 'adk_events:' .. id,
    user = 'adk_user_state:' .. u, index = 'adk_index:' .. u,
    app = (app_key ~= '' and app_key) or nil,
    sid = s, member = s and (s .. ' ' .. c.uid), apps = {},
  }
  for _, o in ipairs(ORDERS) do k.apps[o] = 'adk_app_index:' .. c.tag .. app .. ':' .. o end
  return k
end

-- list files the session in the app's index: created once (score: its
-- creation time, ms), by last update time (asc, desc). A member lost (its
-- index expired while the session lived on other writes) comes back.
local function list(k, created, last)
  redis.call('ZADD', k.apps.created, 'NX', tonumber(created), k.member)
  redis.call('ZADD', k.apps.asc, tonumber(last), k.member)
  redis.call('ZADD', k.apps.desc, -tonumber(last), k.member)
end

-- unlist takes member "<s> <u>" out of the app's index (apps: k.apps).
local function unlist(apps, member)
  for _, o in ipairs(ORDERS) do redis.call('ZREM', apps[o], member) end
end

-- PRUNE is how many members of the app's index a create examines.
local PRUNE = 2

-- prune examines PRUNE random members of the app's index and drops those
-- whose session is gone (expired, deleted by another route, erased): dead
-- members go at least as fast as creates add members, wherever they sit.
local function prune(c, app, k)
  for _, m in ipairs(redis.call('ZRANDMEMBER', k.apps.created, PRUNE)) do
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

-- size is state hash key's bytes after setting pairs (k, v, ...): its
-- stored total less each replaced value plus each new one, and its keys
-- then when pairs add one (else 0: a state past the bound may still change
-- the keys it holds). One HSTRLEN per pair: bounded by the delta.
local function size(key, pairs)
  local total = tonumber(redis.call('HGET', key, '#') or '0') or 0
  local n, added = redis.call('HLEN', key), 0
  if n > 0 then n = n - 1 end -- the '#' field
  for i = 1, #pairs, 2 do
    local f = '=' .. pairs[i]
    local old = redis.call('HSTRLEN', key, f) -- 0: absent (a value is never empty)
    if old > 0 then total = total - old - #f else added = added + 1 end
    total = total + #f + #pairs[i + 1]
  end
  return total, added > 0 and n + added or 0
end

-- too_big is the refusal of a state of scope whose size (bytes, keys)
-- would pass max_bytes or max_keys; nil when it fits.
local function too_big(scope, bytes, keys, max_bytes, max_keys)
  local name = ({ s = 'session', u = 'user', a = 'app' })[scope]
  if bytes > max_bytes then
    return reply.refused('state_too_big', 'the ' .. name .. ' state would be ' .. bytes .. ' bytes; at most '
      .. max_bytes .. ' (ADK_MAX_STATE_BYTES); nothing was changed')
  end
  if keys > max_keys then
    return reply.refused('state_too_big', 'the ' .. name .. ' state would hold ' .. keys .. ' keys; at most '
      .. max_keys .. '; nothing was changed')
  end
end

-- apply sets pairs on state hash key whose new size is total.
local function apply(key, pairs, total)
  if #pairs == 0 then return end
  local args = { '#', tostring(total) }
  for i = 1, #pairs, 2 do
    args[#args + 1] = '=' .. pairs[i]
    args[#args + 1] = pairs[i + 1]
  end
  redis.call('HSET', key, unpack(args))
end

-- state reads a state hash as {key, value, ...} (the '#' field left out).
-- One HGETALL is bounded: a state holds at most MaxStateKeys (1 000) keys
-- and ADK_MAX_STATE_BYTES, both checked by every write (too_big).
local function state(key)
  local out, all = {}, redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 1) == '=' then
      out[#out + 1] = string.sub(all[i], 2)
      out[#out + 1] = all[i + 1]
    end
  end
  return out
end

-- pttls are the PTTLs of keys, read before the script's first write for
-- keep (meta.expire tells a new key by its -2).
local function pttls(keys)
  local out = {}
  for i, k in ipairs(keys) do out[i] = redis.call('PTTL', k) end
  return out
end

-- keep gives user-level keys at least ttl seconds (none for 0), as the
-- session's keys get theirs (meta.expire's rule); p: their pttls.
local function keep(keys, ttl, p)
  for i, k in ipairs(keys) do meta.expire(k, ttl, p[i]) end
end

return {
  ORDERS = ORDERS, sidecar_id = sidecar_id, record = record, keys = keys, list = list, unlist = unlist, prune = prune,
  deltas = deltas, size = size, too_big = too_big, apply = apply, state = state, pttls = pttls, keep = keep,
}
