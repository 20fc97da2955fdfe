--! prelude: registry_lib
-- registry_active: start or reuse the user's active session. Candidates are
-- the user's running sessions whose metadata holds every pair of match. The
-- most recently active one is reused when not abandoned (the reuse is
-- activity); otherwise up to AUTO_CLOSE_MAX abandoned candidates are
-- completed as auto_closed with an auto-summary, and the new session
-- (the one KEYS name) is created with its title and metadata.
-- KEYS[1..15] the new session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, new session_id (session_lib.lua)
-- ARGV[5] SESSION_ABANDON_AFTER_SECONDS in µs
-- ARGV[6] '1' when ARGV[7] is the new session's title, else '0'
-- ARGV[8] the new session's metadata (match pairs included), JSON or ''
-- ARGV[9] match: a flat JSON string map, or '' (every running session)
-- returns {session_id, 1 created / 0 reused, {closed session ids...}}; the
--   KEYTYPE error of guard (nothing written) when a key it would write
--   holds another type.
local match = nil
if ARGV[9] ~= '' then match = cjson.decode(ARGV[9]) end
local new_sid = SID
-- Every check before the first write (Redis does not roll back): the new
-- session's keys and indexes, then those of the sessions it would reuse or
-- close.
local refused = guard('keep', unpack(meta_checks(ARGV[8])))
if refused then return refused end
local cutoff = now_us() - tonumber(ARGV[5])
local found, gone = candidates(match, AUTO_CLOSE_MAX, cutoff)
local reuse = #found > 0 and found[1].last >= cutoff
for _, c in ipairs(found) do
  retarget(c.sid)
  if reuse then
    refused = guard('keep')
  else
    refused = guard('move', { K_ENTRIES, 'list' })
  end
  if refused then return refused end
  if reuse then break end
end
retarget(new_sid)
drop_expired(gone)
if reuse then
  retarget(found[1].sid)
  finish_write(false, false)
  return { found[1].sid, 0, {} }
end
local closed = {}
for _, c in ipairs(found) do -- all abandoned: the newest is
  retarget(c.sid)
  end_session('auto_closed', auto_summary(), true)
  closed[#closed + 1] = c.sid
end
retarget(new_sid)
local f = {}
if ARGV[6] == '1' then f[#f + 1], f[#f + 2] = 'title', ARGV[7] end
if ARGV[8] ~= '' then f[#f + 1], f[#f + 2] = 'metadata', ARGV[8] end
if #f > 0 then redis.call('HSET', K_RECORD, unpack(f)) end
finish_write(false, true)
return { new_sid, 1, closed }
