-- messages_fork: a new session of the same user (same slot on Cluster)
-- holding the path root..at of this one: the same ids, contents, tree nodes
-- and append numbers, the compactions wholly inside the path and the
-- session's context blocks (not its frozen prompt: the fork renders its
-- own); its record's parent_session_id is this session and at is its
-- latest leaf. O(depth of at), at most SESSION_MAX_MESSAGES. This
-- session is not written.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] at: the message the path ends with
-- ARGV[3] the new session's id
-- ARGV[4] '1' when ARGV[5] is its title, else '0'
-- ARGV[6] the Idempotency-Key, or ''
-- returns (reply.lua) {'ok', 'started'} forked (the new session always
--   starts); {'dup'} the fork was made by this Idempotency-Key already;
--   {'missing'} no such session or message; {'refused', ...}:
--   session_exists (the new id is taken), key_wrong_type.
--- @include reply
--- @include session
--- @include events
--- @include msgtree
--- @include messages

-- the blocks module's session blocks, which the fork copies
local BLOCKS = 'agent_session_blocks'

local c = msgtree.open(session.open(KEYS, ARGV))
local at, sid, key = ARGV[2], ARGV[3], ARGV[6]
local source = c.sid
local refused = msgtree.begin(c)
if refused then return refused end
if not session.exists(c) or not session.has(c, msgtree.MTREE) then return reply.missing() end
local n = msgtree.node(c, at)
if not n then return reply.missing() end
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
local cseq = #comps > 0 and redis.call('HGET', c.mcomp, ' seq')
-- the session's context blocks (at most BLOCKS_MAX_PER_SESSION, 128)
local blocks = {}
if session.has(c, BLOCKS) then blocks = redis.call('HGETALL', session.key(c, BLOCKS)) end
-- from here on, the new session (f)
local f, checked = messages.new_session_checks(c, sid, key)
if checked == 'again' then return session.reply(c, reply.dup()) end
if checked then return checked end
local to_blocks
if #blocks > 0 then
  to_blocks = session.use(f, BLOCKS, 'hash')
  if redis.call('EXISTS', to_blocks) == 1 then return reply.bad_key('Redis key ' .. to_blocks .. ' already exists') end
end
msgtree.use(f, false, #comps > 0)
events.use(f)
refused = session.commit(f)
if refused then return refused end

-- the path's nodes are the fork's: its cache holds them (leaf_fields)
for _, p in ipairs(nodes) do f.nodes[p.id] = p end
msgtree.copy_path(f, nodes, msgs)
if #blocks > 0 then redis.call('HSET', to_blocks, unpack(blocks)) end
if #comps > 0 then
  comps[#comps + 1], comps[#comps + 2] = ' seq', cseq or '0'
  redis.call('HSET', f.mcomp, unpack(comps))
end
local fields = msgtree.leaf_fields(f, at, #nodes)
for _, v in ipairs({ 'msg_seq', msgtree.fmt_int(seq), 'parent_session_id', source }) do fields[#fields + 1] = v end
if ARGV[4] == '1' then fields[#fields + 1], fields[#fields + 2] = 'title', ARGV[5] end
if key ~= '' then fields[#fields + 1], fields[#fields + 2] = 'create_key', key end
events.emit(f, 'status', 'state', nil, '{"status":"started","parent_session_id":' .. cjson.encode(source) .. ',"forked_at":' .. cjson.encode(at) .. '}')
session.finish(f, fields)
return session.reply(f, reply.ok('started'))
