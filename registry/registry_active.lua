-- registry_active: start or reuse the user's active session. Candidates are
-- the user's running sessions whose metadata holds every pair of match. The
-- most recently active one is reused when not abandoned (the reuse is
-- activity); otherwise up to AUTO_CLOSE_MAX abandoned candidates are
-- completed as auto_closed with an auto-summary, and the new session
-- (the one KEYS name) is created with its title and metadata.
-- KEYS[1..15] the new session's keys, indexes and totals (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, new session_id (session.lua)
-- ARGV[5] SESSION_ABANDON_AFTER_SECONDS in µs
-- ARGV[6] '1' when ARGV[7] is the new session's title, else '0'
-- ARGV[8] the new session's metadata (match pairs included), JSON or ''
-- ARGV[9] match: a flat JSON string map, or '' (every running session)
-- emits status {status: reused} into a reused session, {status: started}
-- into a new one, and each auto-closed session's status event.
-- returns {'ok', session_id, 1 created / 0 reused, {closed session
--   ids...}}; {'refused', 'key_wrong_type', text} (nothing written) when a
--   key it would write holds another type, or one it reads for an
--   auto-summary (an abandoned session's entries, message order or
--   messages).
--- @include reply
--- @include clock
--- @include meta
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local match = nil
if ARGV[9] ~= '' then match = cjson.decode(ARGV[9]) end
-- Every check before the first write (Redis does not roll back): the new
-- session's keys and indexes, then those of the sessions it would reuse or
-- close.
local refused = session.guard(c, 'keep', unpack(meta.checks(c, ARGV[8])))
if refused then return refused end
local cutoff = clock.now_us() - tonumber(ARGV[5])
local found, gone = registry.candidates(c, match, registry.AUTO_CLOSE_MAX, cutoff)
local reuse = #found > 0 and found[1].last >= cutoff
for _, f in ipairs(found) do
  if reuse then
    refused = session.guard(f.c, 'keep')
  else
    refused = session.guard(f.c, 'move', registry.summary_checks(f.c))
  end
  if refused then return refused end
  if reuse then break end
end
refused = registry.drop_expired(c, gone)
if refused then return refused end
if reuse then
  events.emit(found[1].c, 'status', 'state', nil, '{"status":"reused"}')
  session.finish_write(found[1].c, false, false)
  return reply.ok(found[1].sid, 0, {})
end
local closed = {}
for _, f in ipairs(found) do -- all abandoned: the newest is
  registry.end_session(f.c, 'auto_closed', registry.auto_summary(f.c), true)
  closed[#closed + 1] = f.sid
end
-- the new session (c, KEYS's)
local fields = {}
if ARGV[6] == '1' then fields[#fields + 1], fields[#fields + 2] = 'title', ARGV[7] end
if ARGV[8] ~= '' then fields[#fields + 1], fields[#fields + 2] = 'metadata', ARGV[8] end
if #fields > 0 then redis.call('HSET', c.record, unpack(fields)) end
events.emit(c, 'status', 'state', nil, '{"status":"started"}')
session.finish_write(c, false, true)
return reply.ok(c.sid, 1, closed)
