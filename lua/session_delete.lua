-- session_delete: remove the whole session: entries, traces, context, record,
-- qa_id index, usage ids, state, context blocks, frozen prompt, tool calls,
-- messages, compactions and their search documents (session.own_keys(c)), and its
-- place in every index set (status and metadata).
-- The usage totals across sessions keep what it spent (they are all-time
-- counters).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- The event stream is emptied but for the `deleted` event it gets, kept
-- 300 s (events.TOMBSTONE_SECONDS) so every pod's readers see it, when the
-- stream is watched (lib/events.lua); else it goes with the rest.
-- returns (reply.lua) {'ok', the number of the session's own keys
--   removed}; {'missing'} when there is no such session; {'refused', ...}.
-- Every read before the first write: a record of the wrong type (or with
-- metadata that is not a JSON object of strings, written by hand) has no
-- metadata index to leave, and must not stop the delete half-way.
--- @include reply
--- @include guard
--- @include meta
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local metadata = redis.pcall('HGET', c.record, 'metadata')
if type(metadata) ~= 'string' then metadata = nil end
local refused = session.guard(c, 'indexes', unpack(meta.checks(c, metadata)))
if refused then return refused end
if type(metadata) ~= 'string' then
  metadata = nil
else
  local ok, decoded = pcall(cjson.decode, metadata)
  if not ok or type(decoded) ~= 'table' then
    metadata = nil
  else
    for k, v in pairs(decoded) do
      if type(k) ~= 'string' or type(v) ~= 'string' then metadata = nil end
    end
  end
end
session.unindex(c)
meta.unindex(c, metadata)
-- its search index is two of its own keys; the user's list of sessions
-- with documents forgets it
redis.pcall('ZREM', c.slist, c.sid) -- another type: not ours to fail the delete on
-- the stream and its watch marker are not counted (a reader keeps the
-- marker); watched is read before they go
local watched = events.recording(c)
local marker = session.key(c, events.WATCH_SESSION)
local own = {}
for _, k in ipairs(session.own_keys(c)) do
  if k ~= c.events and k ~= marker then own[#own + 1] = k end
end
-- UNLINK: a big key (a thread's checkpoints, tens of thousands of fields)
-- is freed off Redis's main thread, as the erasure frees it
local n = redis.call('UNLINK', unpack(own))
if n > 0 then
  if watched then
    -- The stream keeps only its `deleted` event, a tombstone for readers
    -- on every pod, for events.TOMBSTONE_SECONDS; the marker stays as
    -- long at most (its readers keep it while they read).
    events.xadd(c, c.events, 'deleted', '{"user_id":' .. cjson.encode(ARGV[3]) .. ',"session_id":' .. cjson.encode(ARGV[4]) .. '}')
    redis.call('XTRIM', c.events, 'MAXLEN', 1)
    redis.call('EXPIRE', c.events, events.TOMBSTONE_SECONDS)
    redis.call('EXPIRE', marker, events.TOMBSTONE_SECONDS)
  else
    -- nobody watches (SESSION_EVENTS=watched): no tombstone, no key left
    -- that names the session
    redis.call('DEL', c.events, marker)
  end
end
if n == 0 then return reply.missing() end
return reply.ok(n)
