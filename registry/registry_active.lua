-- registry_active: start or reuse the user's active session. Candidates are
-- the user's running sessions whose metadata holds every pair of match. The
-- most recently active one is reused when not abandoned (the reuse is
-- activity); otherwise up to AUTO_CLOSE_MAX abandoned candidates are
-- completed as auto_closed with an auto-summary, and the new session
-- (the one KEYS names) is created with its title and metadata.
-- KEYS[1] the new session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_ABANDON_AFTER_SECONDS in µs
-- ARGV[3] '1' when ARGV[4] is the new session's title, else '0'
-- ARGV[5] the new session's metadata (match pairs included), JSON or ''
-- ARGV[6] match: a flat JSON string map, or '' (every running session)
-- emits status {status: reused} into a reused session, {status: started}
-- into a new one, and each auto-closed session's status event.
-- returns (reply.lua) {'ok', session_id, 1 created / 0 reused, {closed
--   session ids...}}; {'refused', 'key_wrong_type', text} (nothing
--   written) when a key it would write holds another type, or one it reads
--   (the index it scans; for an auto-summary, an abandoned session's
--   entries, message order or messages); {'refused', ...} when the user is
--   fenced.
-- Redis commands, reusing a session within the core's grain: TIME, the
-- index's ZREVRANGE, the candidate's HMGET, session.begin's two, the
-- event's XADD and PUBLISH when recorded, the record's HSET.
--- @include reply
--- @include guard
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local match = nil
if ARGV[6] ~= '' then match = cjson.decode(ARGV[6]) end
local cutoff = session.now(c) - tonumber(ARGV[2]) -- before session.at: its contexts share the time
local found, gone, refused = registry.candidates(c, match, registry.AUTO_CLOSE_MAX, cutoff)
if refused then return refused end
-- Every check before the first write (Redis does not roll back).
if #found > 0 and found[1].last >= cutoff then
  local s = found[1].c
  refused = session.begin(s) or registry.drop_check(gone)
  if refused then return refused end
  events.use(s)
  refused = session.commit(s)
  if refused then return refused end
  registry.drop_expired(c, gone)
  events.emit(s, 'status', 'state', nil, '{"status":"reused"}')
  session.finish(s)
  return reply.ok(found[1].sid, 0, {})
end
-- all abandoned: the newest is; each is closed, then the new session made
refused = session.begin(c) or registry.drop_check(gone)
if refused then return refused end
-- The sessions closed first must not commit before a refusal of a later
-- one's (or the new session's): each one's families new to it
-- (session.check) and its metadata indexes, which its bookkeeping writes
-- and no commit before it checks, are checked first.
local closing, indexes = {}, {}
local function index_checks(s, meta)
  for k, v in pairs(registry.pairs_of(meta)) do
    local uk, gk = registry.names(s, k, v)
    indexes[#indexes + 1], indexes[#indexes + 2] = { uk, 'zset' }, { gk, 'zset' }
  end
end
for i, f in ipairs(found) do
  refused = session.begin(f.c)
  if refused then return refused end
  closing[i], refused = registry.auto_summary(f.c)
  if refused then return refused end
  events.use(f.c)
  refused = session.check(f.c)
  if refused then return refused end
  index_checks(f.c, f.meta)
end
registry.index_pairs(c, registry.pairs_of(ARGV[5]))
events.use(c)
if #found > 0 then
  index_checks(c, ARGV[5])
  refused = session.check(c) or guard.check(indexes)
  if refused then return refused end
end
local closed = {}
for i, f in ipairs(found) do
  refused = session.commit(f.c, { status = 'completed' })
  if refused then return refused end -- only the first can: nothing written
  registry.end_session(f.c, 'auto_closed', closing[i], true)
  closed[i] = f.sid
end
refused = session.commit(c)
if refused then return refused end
registry.drop_expired(c, gone)
events.emit(c, 'status', 'state', nil, '{"status":"started"}')
local fields = {}
if ARGV[3] == '1' then fields[#fields + 1], fields[#fields + 2] = 'title', ARGV[4] end
if ARGV[5] ~= '' then fields[#fields + 1], fields[#fields + 2] = 'metadata', ARGV[5] end
session.finish(c, fields)
return reply.ok(c.sid, 1, closed)
