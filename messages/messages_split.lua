-- messages_split: end this session as completed (end_reason split, the
-- summary as a human summary) and start its continuation, a new session of
-- the same user (same slot on Cluster) whose parent_session_id is this one
-- and whose first message is a system message holding the summary.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the continuation's id
-- ARGV[3] '1' when ARGV[4] is its title, else '0'
-- ARGV[5] the summary
-- ARGV[6] the Idempotency-Key, or ''
-- ARGV[7..10] the system message: id, fingerprint, tokens, body (as
--   messages_append takes them)
-- ARGV[11] SESSION_MAX_MESSAGES
-- ARGV[12..13] the system message's search terms and length
-- returns (reply.lua) {'ok', 'started'} split (the continuation starts
--   now); {'dup'} a retry of ARGV[6] (nothing written); with nothing
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
local sid, key = ARGV[2], ARGV[6]
local own = c.sid
local refused = msgtree.begin(c)
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local status = c.status
if status == 'completed' or status == 'failed' then
  local _, again = messages.new_session_checks(c, sid, key)
  if again == 'again' then return session.reply(c, reply.dup()) end
  return reply.refused('session_ended', 'session ' .. c.uid .. '/' .. own .. ' already ended (' .. status .. ')')
end
-- the continuation (cont): every check of its first message's append too
-- comes before this session's first write
local cont, checked = messages.new_session_checks(c, sid, key)
if checked == 'again' then return session.reply(c, reply.dup()) end
if checked then return checked end
local first = { id = ARGV[7], fp = ARGV[8], tokens = tonumber(ARGV[9]), body = ARGV[10], spec = ARGV[12],
  len = tonumber(ARGV[13]) }
refused = messages.check_new(cont, first)
if refused then return refused end

-- this session ends
events.use(c)
refused = session.commit(c, { status = 'completed' })
if refused then return refused end
local now = session.now(c)
session.clear_abort(c)
events.emit(c, 'status', 'state', nil, '{"status":"completed","end_reason":"split","ended_at":' .. cjson.encode(clock.iso_time(now)) ..
  ',"continued_by":' .. cjson.encode(sid) .. '}')
session.finish(c, { 'ended_at', msgtree.fmt_int(now), 'end_reason', 'split', 'summary', ARGV[5],
  'summary_auto_generated', '0' })
-- the continuation starts
local f = { 'parent_session_id', own }
if ARGV[3] == '1' then f[#f + 1], f[#f + 2] = 'title', ARGV[4] end
if key ~= '' then f[#f + 1], f[#f + 2] = 'create_key', key end
cont.extra = f
events.use(cont)
cont.on_commit = function()
  events.emit(cont, 'status', 'state', nil, '{"status":"started","parent_session_id":' .. cjson.encode(own) .. '}')
end
local out = messages.append(cont, { first }, 'root', '', nil, tonumber(ARGV[11]), '')
if out[1] ~= 'ok' or (out[2] ~= 'stored' and out[2] ~= 'started') then return out end
return session.reply(c, reply.ok('started'))
