-- adk_read: a page of an ADK session (module adk), read only: on the first
-- page the session (app, times, event count) with its session and user
-- state (and the app state on standalone Redis), then its events from the
-- newest down, as ADK's getSession picks them: within the newest
-- num_recent_events, and stopping below the newest event older than
-- after_timestamp. A page holds at most limit events and max_bytes of them
-- (one at least); its cursor is where the next one ends. Writes nothing.
-- KEYS[1] the session's record (lib/session.lua; only its user, session
--   and tag are used)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] app name
-- ARGV[3] the app state's key ('' none: on Cluster it is read apart)
-- ARGV[4] '' for the first page, else the cursor: "<end>:<low>", events
--         below index end, down to low
-- ARGV[5] num_recent_events (0: all)
-- ARGV[6] after_timestamp ('' none)
-- ARGV[7] limit (events of this page)
-- ARGV[8] max_bytes (of this page's events)
-- returns (reply.lua) {'ok', created, last_update, n, next cursor ('' done),
--   {session state pairs}, {user state pairs}, {app state pairs},
--   event, event, ... newest first}; {'missing'} no ADK session of this
--   app; {'refused', 'key_wrong_type', text} the ADK record or a state
--   holds another type.
--   State pairs are {key, JSON value, ...}; on a later page the record's
--   fields and the states are empty.
--- @include reply
--- @include guard
--- @include session
--- @include adk

local c = session.open(KEYS, ARGV)
local app = ARGV[2]
local k = adk.keys(c, app, ARGV[3])
local r, refused = guard.read('HMGET', k.rec, 'hash', 'app', 'created', 'last_update', 'n')
if refused then return refused end
if r[1] ~= app then return reply.missing() end
local n = tonumber(r[4]) or 0
local out = { 'ok', r[2], r[3], n, '', {}, {}, {} }
local top, low
if ARGV[4] == '' then
  top, low = n, 0
  local recent = tonumber(ARGV[5])
  if recent > 0 and recent < n then low = n - recent end
  for i, key in pairs({ [6] = k.state, [7] = k.user, [8] = k.app }) do
    out[i], refused = adk.state(key)
    if refused then return refused end
  end
else
  top, low = string.match(ARGV[4], '^(%d+):(%d+)$')
  top, low = tonumber(top), tonumber(low)
  if top > n then top = n end
end
local after = tonumber(ARGV[6])
local limit, room = tonumber(ARGV[7]), tonumber(ARGV[8])
local i, got = top - 1, 0
while i >= low do
  if after then
    local t = tonumber(redis.call('HGET', k.events, 't' .. i))
    if t and t < after then break end -- ADK: the events after the newest older one
  end
  if got >= limit then break end
  local size = redis.call('HSTRLEN', k.events, 'e' .. i)
  if got > 0 and size > room then break end
  room = room - size
  out[#out + 1] = redis.call('HGET', k.events, 'e' .. i) or 'null'
  got = got + 1
  i = i - 1
end
local done = i < low
if not done and after then
  local t = tonumber(redis.call('HGET', k.events, 't' .. i))
  done = t ~= nil and t < after
end
if not done then out[5] = string.format('%d:%d', i + 1, low) end
return out
