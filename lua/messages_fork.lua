-- messages_fork: a new session of the same user (same slot on Cluster)
-- holding the path root..at of this one: the same ids, contents, tree nodes
-- and append numbers, the compactions wholly inside the path and the
-- session's context blocks (not its frozen prompt: the fork renders its
-- own); its record's parent_session_id is this session and at is its
-- latest leaf. O(depth of at), at most SESSION_MAX_MESSAGES. This
-- session is not written.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] at: the message the path ends with
-- ARGV[6] the new session's id
-- ARGV[7] '1' when ARGV[8] is its title, else '0'
-- ARGV[9] the Idempotency-Key, or ''
-- returns {1} forked ({2} ... never: the new session always starts now);
--   {0} a retry of ARGV[9] (the new session exists, made with that key:
--   nothing written); with nothing written, {-1, code, detail}: 'not_found'
--   (no message at; detail '' for no such session), 'session_exists',
--   'wrong_type'.
--- @include guard
--- @include session
--- @include events
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local at, sid, key = ARGV[5], ARGV[6], ARGV[9]
local source = c.sid
if not session.exists(c) then return { -1, 'not_found', '' } end
local n = msgtree.node(c, at)
if not n then return { -1, 'not_found', at } end
local nodes = msgtree.path_nodes(c, n)
local ids = {}
for i, p in ipairs(nodes) do ids[i] = p.id end
local msgs = msgtree.hmget_chunks(c.msgs, ids)
local _, seq = msgtree.rec_msgs(c)
-- the compactions wholly inside the path
local comps = {}
for _, cp in ipairs(messages.compactions(c)) do
  if messages.on_path(c, cp, n) then
    comps[#comps + 1] = cp.id
    comps[#comps + 1] = cp.json
    comps[#comps + 1] = '#' .. cp.id
    comps[#comps + 1] = table.concat({ cp.from, cp.to, msgtree.fmt_int(cp.seq), msgtree.fmt_int(cp.stokens) }, '\t')
  end
end
local cseq = redis.call('HGET', c.mcomp, ' seq')
-- the session's context blocks (at most BLOCKS_MAX_PER_SESSION, 128)
local blocks = {}
local from_blocks = session.key(c, 'agent_session_blocks')
if guard.key_type(from_blocks) == 'hash' then blocks = redis.call('HGETALL', from_blocks) end
-- from here on, the new session (f)
local f, refused = messages.new_session_checks(c, sid, key)
if refused == 'again' then return { 0 } end
if refused then return refused end
local to_blocks = session.key(f, 'agent_session_blocks')
if #blocks > 0 and guard.key_type(to_blocks) ~= 'none' then
  return { -1, 'wrong_type', 'Redis key ' .. to_blocks .. ' already exists' }
end

msgtree.copy_path(f, nodes, msgs)
if #blocks > 0 then redis.call('HSET', to_blocks, unpack(blocks)) end
if #comps > 0 then
  comps[#comps + 1], comps[#comps + 2] = ' seq', cseq or '0'
  redis.call('HSET', f.mcomp, unpack(comps))
end
local fields = { 'msg_leaf', at, 'msg_seq', msgtree.fmt_int(seq), 'message_count', #nodes, 'parent_session_id', source }
if ARGV[7] == '1' then fields[#fields + 1], fields[#fields + 2] = 'title', ARGV[8] end
if key ~= '' then fields[#fields + 1], fields[#fields + 2] = 'create_key', key end
redis.call('HSET', f.record, unpack(fields))
events.emit(f, 'status', 'state', nil, '{"status":"started","parent_session_id":' .. cjson.encode(source) .. ',"forked_at":' .. cjson.encode(at) .. '}')
session.finish_write(f, false, true)
return { 1 }
