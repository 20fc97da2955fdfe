--! prelude: messages_lib
-- messages_fork: a new session of the same user (same slot on Cluster)
-- holding the path root..at of this one: the same ids, contents, tree nodes
-- and append numbers, the compactions wholly inside the path and the
-- session's context blocks (not its frozen prompt: the fork renders its
-- own); its record's parent_session_id is this session and at is its
-- latest leaf. O(depth of at), at most SESSION_MAX_MESSAGES. This
-- session is not written.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] at: the message the path ends with
-- ARGV[6] the new session's id
-- ARGV[7] '1' when ARGV[8] is its title, else '0'
-- ARGV[9] the Idempotency-Key, or ''
-- returns {1} forked ({2} ... never: the new session always starts now);
--   {0} a retry of ARGV[9] (the new session exists, made with that key:
--   nothing written); with nothing written, {-1, code, detail}: 'not_found'
--   (no message at; detail '' for no such session), 'session_exists',
--   'wrong_type'.
local at, sid, key = ARGV[5], ARGV[6], ARGV[9]
local source = SID
if not session_exists() then return { -1, 'not_found', '' } end
local n = node(at)
if not n then return { -1, 'not_found', at } end
local nodes = path_nodes(n)
local ids = {}
for i, p in ipairs(nodes) do ids[i] = p.id end
local msgs = hmget_chunks(K_MSGS, ids)
local _, seq = rec_msgs()
-- the compactions wholly inside the path
local comps = {}
for _, c in ipairs(compactions()) do
  if on_path(c, n) then
    comps[#comps + 1] = c.id
    comps[#comps + 1] = c.json
    comps[#comps + 1] = '#' .. c.id
    comps[#comps + 1] = table.concat({ c.from, c.to, fmt_int(c.seq), fmt_int(c.stokens) }, '\t')
  end
end
local cseq = redis.call('HGET', K_MCOMP, ' seq')
-- the session's context blocks (at most BLOCKS_MAX_PER_SESSION, 128)
local blocks = {}
if key_type(K_BLOCKS) == 'hash' then blocks = redis.call('HGETALL', K_BLOCKS) end
local refused = new_session_checks(sid, key)
if refused == 'again' then return { 0 } end
if refused then return refused end
if #blocks > 0 and key_type(K_BLOCKS) ~= 'none' then
  return { -1, 'wrong_type', 'Redis key ' .. K_BLOCKS .. ' already exists' }
end

copy_path(nodes, msgs)
if #blocks > 0 then redis.call('HSET', K_BLOCKS, unpack(blocks)) end
if #comps > 0 then
  comps[#comps + 1], comps[#comps + 2] = ' seq', cseq or '0'
  redis.call('HSET', K_MCOMP, unpack(comps))
end
local f = { 'msg_leaf', at, 'msg_seq', fmt_int(seq), 'message_count', #nodes, 'parent_session_id', source }
if ARGV[7] == '1' then f[#f + 1], f[#f + 2] = 'title', ARGV[8] end
if key ~= '' then f[#f + 1], f[#f + 2] = 'create_key', key end
redis.call('HSET', K_RECORD, unpack(f))
emit('status', 'state', nil, '{"status":"started","parent_session_id":' .. cjson.encode(source) .. ',"forked_at":' .. cjson.encode(at) .. '}')
finish_write(false, true)
return { 1 }
