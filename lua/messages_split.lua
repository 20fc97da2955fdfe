-- messages_split: end this session as completed (end_reason split, the
-- summary as a human summary) and start its continuation, a new session of
-- the same user (same slot on Cluster) whose parent_session_id is this one
-- and whose first message is a system message holding the summary.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the continuation's id
-- ARGV[6] '1' when ARGV[7] is its title, else '0'
-- ARGV[8] the summary
-- ARGV[9] the Idempotency-Key, or ''
-- ARGV[10..13] the system message: id, fingerprint, tokens, body (as
--   messages_append takes them)
-- ARGV[14] SESSION_MAX_MESSAGES
-- ARGV[15..16] the system message's search terms and length
-- returns (reply.lua) {'ok', 'started'} split (the continuation starts
--   now); {'dup'} a retry of ARGV[9] (nothing written); with nothing
--   written, {'missing'} (no such session), {'refused', code, text} for
--   'session_ended' (it ended before), 'session_exists' and
--   'key_wrong_type'.
--- @include reply
--- @include clock
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local sid, key = ARGV[5], ARGV[9]
local own = c.sid
local refused = session.guard(c, 'move')
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local bad = session.check_finish(c, nil, true)
if bad then return reply.bad_key(bad) end
local status = redis.call('HGET', c.record, 'status')
if status == 'completed' or status == 'failed' then
  local _, again = messages.new_session_checks(c, sid, key)
  if again == 'again' then return reply.dup() end
  return reply.refused('session_ended', 'session ' .. c.uid .. '/' .. own .. ' already ended (' .. status .. ')')
end
-- the continuation (cont)
local cont, checked = messages.new_session_checks(c, sid, key)
if checked == 'again' then return reply.dup() end
local spec = search.wanted(c, ARGV[15])
refused = checked
if refused then return refused end

-- this session ends
local now = clock.now_us()
local ended = { 'status', 'completed', 'ended_at', msgtree.fmt_int(now), 'end_reason', 'split',
  'summary', ARGV[8], 'summary_auto_generated', '0' }
if not status then -- a session only Cognee wrote: it started with its first entry
  ended[#ended + 1], ended[#ended + 2] = 'started_at', session.started_at_of(c, now)
end
redis.call('HSET', c.record, unpack(ended))
session.clear_abort(c)
events.emit(c, 'status', 'state', nil, '{"status":"completed","end_reason":"split","ended_at":' .. cjson.encode(clock.iso_time(now)) ..
  ',"continued_by":' .. cjson.encode(sid) .. '}')
session.finish_write(c, true)
-- the continuation starts
local f = { 'parent_session_id', own }
if ARGV[6] == '1' then f[#f + 1], f[#f + 2] = 'title', ARGV[7] end
if key ~= '' then f[#f + 1], f[#f + 2] = 'create_key', key end
redis.call('HSET', cont.record, unpack(f))
events.emit(cont, 'status', 'state', nil, '{"status":"started","parent_session_id":' .. cjson.encode(own) .. '}')
local first = messages.append(cont, { { id = ARGV[10], fp = ARGV[11], tokens = tonumber(ARGV[12]), body = ARGV[13],
  spec = spec, len = tonumber(ARGV[16]) } },
  'root', '', nil, tonumber(ARGV[14]), '')
if first[1] ~= 'ok' or (first[2] ~= 'stored' and first[2] ~= 'started') then return first end
return reply.ok('started')
