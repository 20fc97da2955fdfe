--! prelude: messages_lib
-- messages_split: end this session as completed (end_reason split, the
-- summary as a human summary) and start its continuation, a new session of
-- the same user (same slot on Cluster) whose parent_session_id is this one
-- and whose first message is a system message holding the summary.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the continuation's id
-- ARGV[6] '1' when ARGV[7] is its title, else '0'
-- ARGV[8] the summary
-- ARGV[9] the Idempotency-Key, or ''
-- ARGV[10..13] the system message: id, fingerprint, tokens, body (as
--   messages_append takes them)
-- ARGV[14] SESSION_MAX_MESSAGES
-- ARGV[15..17] the system message's search terms, length and preview
-- returns {1} split; {0} a retry of ARGV[9] (nothing written); with
--   nothing written, {-1, code, detail}: 'not_found' (no such session),
--   'session_ended' (detail: its status), 'session_exists', 'wrong_type'.
local sid, key = ARGV[5], ARGV[9]
local own = SID
local refused = guard('move')
if refused then return refused end
if not session_exists() then return { -1, 'not_found', '' } end
local bad = check_finish(nil, true)
if bad then return { -1, 'wrong_type', bad } end
local status = redis.call('HGET', K_RECORD, 'status')
if status == 'completed' or status == 'failed' then
  local again = new_session_checks(sid, key)
  if again == 'again' then return { 0 } end
  return { -1, 'session_ended', status }
end
refused = new_session_checks(sid, key)
if refused == 'again' then return { 0 } end
refused = refused or check_terms({ { spec = ARGV[15] } })
if refused then return refused end

retarget(own)
local now = now_us()
local ended = { 'status', 'completed', 'ended_at', fmt_int(now), 'end_reason', 'split',
  'summary', ARGV[8], 'summary_auto_generated', '0' }
if not status then -- a session only Cognee wrote: it started with its first entry
  ended[#ended + 1], ended[#ended + 2] = 'started_at', started_at_of(now)
end
redis.call('HSET', K_RECORD, unpack(ended))
clear_abort()
emit('status', 'state', nil, '{"status":"completed","end_reason":"split","ended_at":' .. cjson.encode(iso_time(now)) ..
  ',"continued_by":' .. cjson.encode(sid) .. '}')
finish_write(true)
retarget(sid)
local f = { 'parent_session_id', own }
if ARGV[6] == '1' then f[#f + 1], f[#f + 2] = 'title', ARGV[7] end
if key ~= '' then f[#f + 1], f[#f + 2] = 'create_key', key end
redis.call('HSET', K_RECORD, unpack(f))
emit('status', 'state', nil, '{"status":"started","parent_session_id":' .. cjson.encode(own) .. '}')
local reply = append_messages({ { id = ARGV[10], fp = ARGV[11], tokens = tonumber(ARGV[12]), body = ARGV[13],
  spec = ARGV[15], len = tonumber(ARGV[16]), preview = ARGV[17] } },
  'root', '', nil, tonumber(ARGV[14]), '')
if reply[1] ~= 1 and reply[1] ~= 2 then return reply end
return { 1 }
