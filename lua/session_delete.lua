-- session_delete: remove the whole session: the record, every key of the
-- families it has (session.own_keys: entries, traces, context, indexes,
-- state, blocks, messages, their search documents, ...), its place in
-- every index (status, expiry, activity and member sets) and its fields of
-- the user's marker. The usage totals across sessions keep what it spent
-- (they are all-time counters).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- The event stream is emptied but for the `deleted` event it gets, kept
-- 300 s (events.TOMBSTONE_SECONDS) so every pod's readers see it, when the
-- stream is watched (lib/events.lua); else it goes with the rest.
-- returns (reply.lua) {'ok', the number of the session's own keys
--   removed}; {'missing'} when there is no such session; {'refused', ...}
--   when the user is fenced or an index it would write holds another type.
-- A record of the wrong type (written by hand) must not stop the delete:
-- it is the way out. Every read and check comes before the first write.
--- @include reply
--- @include guard
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused and c.refused_by == 'record' then
  -- a record of another type, or with fields not as kept: no families
  -- known, so every registered one, and every status set
  refused = nil
  c.status, c.fams_text, c.idx_text = nil, nil, nil
  -- a session without expiry of its own still leaves the marker's count
  local own = redis.pcall('HGET', c.record, 'ttl_seconds')
  if own == '0' then c.own_ttl = 0 end
end
if refused then return refused end
local ok, list = pcall(function() return c.idx_text and cjson.decode(c.idx_text) or {} end)
if not ok or type(list) ~= 'table' then c.idx_text = nil end
local checks = { { session.expiry(c), 'zset' } }
for _, st in ipairs(c.status and { c.status } or session.STATUSES) do
  checks[#checks + 1] = { session.user_set(c, st), 'zset' }
  checks[#checks + 1] = { session.global_set(c, st), 'zset' }
end
if c.idx_text then
  for _, entry in ipairs(list) do checks[#checks + 1] = { string.sub(entry, 2), 'zset' } end
end
refused = guard.check(checks)
if refused then return refused end
local watched = events.recording(c)
c.events = session.key(c, events.STREAM)
session.unindex(c)
session.forget_marks(c)
session.own_ttl_changed(c, c.own_ttl, nil)
-- a stream another program overwrote goes with the rest: the tombstone
-- makes a new one
local spoiled = watched and redis.call('EXISTS', c.events) == 1 and redis.call('TYPE', c.events).ok ~= 'stream'
local own = {}
for _, k in ipairs(session.own_keys(c)) do
  if k ~= c.events or spoiled then own[#own + 1] = k end
end
-- UNLINK: a big key (a thread's checkpoints, tens of thousands of fields)
-- is freed off Redis's main thread, as the erasure frees it
local n = redis.call('UNLINK', unpack(own))
if n == 0 then return reply.missing() end
if watched then
  -- The stream keeps only its `deleted` event, a tombstone for readers on
  -- every pod, for events.TOMBSTONE_SECONDS.
  -- with the watch mark it removed (session.forget_marks): its readers'
  -- hub tells a watch that ran to the end from one that lapsed
  events.xadd(c, c.events, 'deleted', '{"user_id":' .. cjson.encode(c.uid) .. ',"session_id":' .. cjson.encode(c.sid) .. '}',
    c.marks.w)
  redis.call('XTRIM', c.events, 'MAXLEN', 1)
  redis.call('EXPIRE', c.events, events.TOMBSTONE_SECONDS)
else
  -- nobody watches (SESSION_EVENTS=watched): no tombstone, no key left
  -- that names the session
  redis.call('DEL', c.events)
end
return reply.ok(n)
