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
-- the XADD and PUBLISH unless the stream is watched: the session's by its
-- field w:<s> of the user's marker (c.marks.w, read by session.begin with
-- the record), the user's by its key agent_user_events_watch:<tag><u>;
-- both hold "<until ms>:<since ms>", set by every reader of the stream on
-- any pod (events/events_watch.lua) and refreshed well inside the grace period
-- (SESSION_EVENTS_GRACE_SECONDS): watched while <until> is ahead of Redis's
-- clock. An unrecorded event still has an id (the time, "<ms>-0"), which
-- nothing stores.
--
-- A script that emits calls events.use(c) before session.commit: when the
-- stream is recorded, it is one of the keys the write writes (session.use:
-- its type checked when the session first has it, its TTL given there).
--- @include guard
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

-- STREAM: the prefix of the session's stream (a session family).
local STREAM = 'agent_session_events'

-- xadd appends one event to stream key and wakes the readers; returns its
-- id. watch, when given, is the stream's watch mark as the write read it
-- (c.marks.w), stored in the event's field w: a session's `deleted` event
-- carries it, as the delete removes the mark, so a reader whose watch
-- began at its since knows it missed nothing before it (events/hub.go).
local function xadd(c, key, typ, d, watch)
  local id
  if watch then
    id = redis.call('XADD', key, 'MAXLEN', '~', c.events_maxlen, '*', 't', typ, 'd', d, 'w', watch)
  else
    id = redis.call('XADD', key, 'MAXLEN', '~', c.events_maxlen, '*', 't', typ, 'd', d)
  end
  -- a wake-up is best effort (readers re-read every heartbeat): a PUBLISH
  -- the ACL refuses must not fail a write whose commands already ran
  redis.pcall('PUBLISH', CHANNEL .. key, '')
  return id
end

-- WATCH_USER: the prefix of the user stream's marker (events/keys.go);
-- USER_STREAM: the user's stream's.
local WATCH_USER = 'agent_user_events_watch'
local USER_STREAM = 'agent_user_events'

-- watched reports whether marker value v ("<until ms>:<since ms>", or
-- nil) says its stream is watched now.
local function watched(c, v)
  if not v then return false end
  local till = tonumber(string.match(v, '^(%d+)'))
  return till ~= nil and till > math.floor(session.now(c) / 1000)
end

-- recording reports whether the session's events are recorded now (always
-- with SESSION_EVENTS=always).
local function recording(c)
  if not c.events_watched then return true end
  return watched(c, c.marks.w)
end

-- use declares the session's stream among the keys the write writes, when
-- its events are recorded (before session.commit).
local function use(c)
  if recording(c) then c.events = session.use(c, STREAM, 'stream') end
end

-- unrecorded is the id an event nobody watches gets: the time, no
-- sequence.
local function unrecorded(c)
  return math.floor(session.now(c) / 1000) .. '-0' -- ms: 13 digits, exact
end

-- emit appends the write's event to the session's stream (see the header),
-- after session.commit; the script called events.use before it.
local function emit(c, typ, kind, id, json)
  if not recording(c) then return unrecorded(c) end
  if not c.events then error('events.emit without events.use before session.commit') end
  return xadd(c, c.events, typ, data(kind, id, json))
end

-- emit_user appends an event to the user's stream, which lives
-- SESSION_TTL_SECONDS from its last event (none when 0).
local function emit_user(c, typ, kind, id, json)
  if c.events_watched and not watched(c, redis.call('GET', session.user_key(c, WATCH_USER))) then
    return unrecorded(c)
  end
  local stream = session.user_key(c, USER_STREAM)
  local eid = xadd(c, stream, typ, data(kind, id, json))
  if c.default_ttl > 0 then redis.call('EXPIRE', stream, c.default_ttl) end
  return eid
end

-- user_refused is the refusal when the user's event stream holds another
-- type, else nil: a script that calls emit_user checks it before its first
-- write (after session.begin, which refuses a fenced user).
local function user_refused(c)
  return guard.check({ { session.user_key(c, USER_STREAM), 'stream' } })
end

return {
  -- TOMBSTONE_SECONDS: how long a deleted session's stream keeps its
  -- `deleted` event, so readers on every pod see it.
  TOMBSTONE_SECONDS = 300,
  STREAM = STREAM,
  WATCH_USER = WATCH_USER,
  xadd = xadd,
  recording = recording,
  use = use,
  emit = emit,
  emit_user = emit_user,
  user_refused = user_refused,
}
