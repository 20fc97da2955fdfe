-- events: the live events of sessions and users. Every write of a session,
-- in the same script as the write, calls
--   events.emit(c, type, kind, id, data_json)
-- once it has made all its checks (so a refused or repeated write emits
-- nothing): it XADDs {t = type, d = data} to the session's event stream
-- agent_session_events:<tag><u>:<s> (c.events, one of the session's own
-- keys: slid, persisted and deleted with them) with MAXLEN ~
-- SESSION_EVENTS_MAXLEN, and PUBLISHes '' on the stream's own channel
-- sidecar:events:<stream key> so its readers wake up. data_json is the
-- stored object's JSON; past 8 KiB the event carries
-- {"id": id, "kind": kind, "truncated": true} instead (kind: entry, message,
-- trace, context, block, state, custom; id: the object's id or nil). It
-- returns the event id ("<ms>-<seq>", the SSE id). Types: entry_appended,
-- entry_updated, entry_deleted, feedback, message_appended, message_updated,
-- message_deleted, trace_appended, context_changed, usage, status,
-- block_changed, state_changed, session_updated, ttl_changed, compaction,
-- compaction_suggested, abort, abort_cleared, deleted, and x-<name> custom
-- events. events.emit_user(c, type, kind, id, data_json) does the same on
-- the user's stream agent_user_events:<tag><u> (user-level changes such as
-- user blocks), which lives SESSION_TTL_SECONDS from its last event.
--
-- Recording (SESSION_EVENTS, c.events_watched): with 'watched' both skip
-- the XADD, EXPIRE and PUBLISH unless the stream is watched: its marker
-- (agent_session_events_watch:<tag><u>:<s>, agent_user_events_watch:<tag><u>)
-- holds "<until ms>:<since ms>", set by every reader of the stream on any
-- pod (lua/events_watch.lua) and refreshed well inside the grace period it
-- lives (SESSION_EVENTS_GRACE_SECONDS): watched while <until> is ahead of
-- Redis's clock. The value, not the key's TTL, decides, because the session
-- marker is one of the session's own keys (deleted with it) and a slide
-- moves its TTL to the session's. An unrecorded event still has an id (the
-- time, "<ms>-0"), which nothing stores.
--- @include guard
--- @include erasure
--- @include clock
--- @include session

local CHANNEL = 'sidecar:events:'
-- DATA_MAX: an event's data past it is {id, kind, truncated: true}.
local DATA_MAX = 8192

-- data is data_json, or its stand-in past DATA_MAX.
local function data(kind, id, json)
  if #json <= DATA_MAX then return json end
  local idj = 'null'
  if id and id ~= '' then idj = cjson.encode(id) end
  return '{"id":' .. idj .. ',"kind":"' .. kind .. '","truncated":true}'
end

-- xadd appends one event to stream key and wakes the readers; returns its
-- id and whether the stream is new. NOMKSTREAM first: a stream that exists
-- (the usual case) costs one XADD, a new one a second.
local function xadd(c, key, typ, d, first)
  local id
  if first then
    id = redis.pcall('XADD', key, 'NOMKSTREAM', 'MAXLEN', '~', c.events_maxlen, '*', 't', typ, 'd', d)
    if type(id) == 'table' then return guard.from_error(key, 'stream', id) end
  else
    id = redis.call('XADD', key, 'NOMKSTREAM', 'MAXLEN', '~', c.events_maxlen, '*', 't', typ, 'd', d)
  end
  local fresh = not id
  if fresh then id = redis.call('XADD', key, 'MAXLEN', '~', c.events_maxlen, '*', 't', typ, 'd', d) end
  -- a wake-up is best effort (readers re-read every heartbeat): a PUBLISH
  -- the ACL refuses must not fail a write whose commands already ran
  redis.pcall('PUBLISH', CHANNEL .. key, '')
  return id, fresh
end

-- WATCH_SESSION, WATCH_USER: the prefixes of the markers (events/keys.go).
local WATCH_SESSION = 'agent_session_events_watch'
local WATCH_USER = 'agent_user_events_watch'

-- watched reports whether marker says its stream is watched now. A marker
-- of another type (written by hand) records, as before markers existed.
local function watched(marker)
  local v = redis.pcall('GET', marker)
  if type(v) == 'table' then return true end
  if not v then return false end
  local till = tonumber(string.match(v, '^(%d+)'))
  return till ~= nil and till > math.floor(clock.now_us() / 1000)
end

-- recording reports whether the session's events are recorded now (always
-- with SESSION_EVENTS=always). It asks once per call and context: a script
-- that emits many events (a batch of messages) reads the marker once.
local function recording(c)
  if not c.events_watched then return true end
  local r = rawget(c, 'events_recording')
  if r == nil then
    r = watched(session.key(c, WATCH_SESSION))
    rawset(c, 'events_recording', r)
  end
  return r
end

-- unrecorded is the id an event nobody watches gets: the time, no
-- sequence (once per call and context).
local function unrecorded(c)
  local id = rawget(c, 'events_unrecorded')
  if not id then
    id = string.format('%d-0', math.floor(clock.now_us() / 1000))
    rawset(c, 'events_unrecorded', id)
  end
  return id
end

-- emit appends the write's event to the session's stream (see the header).
-- A stream it creates gets the session's TTL at once (a write that does not
-- slide would leave it without one until the next slide). first: this is
-- the script's first write, after every check but the stream's type
-- (session.guard got {c.events, 'stream', 'self'}): its XADD refuses a
-- stream of another type before anything is written, and emit returns the
-- refusal (a table) instead of the event id.
local function emit(c, typ, kind, id, json, first)
  if not recording(c) then
    -- unrecorded, the stream's type is still checked where the XADD would
    -- have: a wrong-typed key refuses the write as it did
    if first then
      local refused = guard.check({ { c.events, 'stream' } })
      if refused then return refused end
    end
    return unrecorded(c)
  end
  local eid, fresh = xadd(c, c.events, typ, data(kind, id, json), first)
  if type(eid) == 'table' then return eid end
  if fresh then
    local t = session.ttl(c)
    if t > 0 then redis.call('EXPIRE', c.events, t) end
  end
  return eid
end

-- emit_user appends an event to the user's stream, which lives
-- SESSION_TTL_SECONDS from its last event (none when 0).
local function emit_user(c, typ, kind, id, json)
  if c.events_watched and not watched(session.user_key(c, WATCH_USER)) then return unrecorded(c) end
  local eid = xadd(c, c.user_events, typ, data(kind, id, json))
  if c.default_ttl > 0 then redis.call('EXPIRE', c.user_events, c.default_ttl) end
  return eid
end

-- user_refused is the refusal when the user is being erased
-- (erasure.fenced) or the user's event stream holds another type, else
-- nil: a script that calls emit_user checks it before its first write.
local function user_refused(c)
  return erasure.fenced(c) or guard.check({ { c.user_events, 'stream' } })
end

return {
  -- TOMBSTONE_SECONDS: how long a deleted session's stream keeps its
  -- `deleted` event, so readers on every pod see it.
  TOMBSTONE_SECONDS = 300,
  WATCH_SESSION = WATCH_SESSION,
  WATCH_USER = WATCH_USER,
  xadd = xadd,
  recording = recording,
  emit = emit,
  emit_user = emit_user,
  user_refused = user_refused,
}
