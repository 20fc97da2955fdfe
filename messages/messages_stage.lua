-- messages_stage: one step of a staged append (messages/stage.go), an
-- append too big for one bounded script: 'open' makes an append's checks
-- and takes the session's stage, each 'put' writes a chunk of its
-- messages where no reader looks, 'commit' makes them visible in one O(1)
-- step, 'drop' removes the messages of a stage that will not commit, a
-- bounded chunk a call.
--
-- The stage is the record's msg_stage (msgtree.parse_stage): a token, a
-- lease (ms of Redis's clock, renewed by every step), seq0 (msg_seq when
-- it opened) and what is staged. Staged messages are written into the
-- session's own messages keys with the sequence numbers seq0 + 1 ..: no
-- reader sees them (msgstage.visible: the path from the latest leaf never
-- reaches them, and a read by id or of children leaves out what comes
-- after seq0), and every other write of the session's messages waits
-- while the stage lives (msgtree.begin: 'staging'), so nothing else takes
-- those numbers. The commit moves the latest leaf, the count and msg_seq
-- to them. A writer that dies leaves the stage to its lease: the next
-- write then meets 'stage_abandoned', drops its messages and goes on; the
-- staged messages end with the session's keys meanwhile.
--
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the step: 'open', 'put', 'commit' or 'drop'
-- ARGV[3] the stage's token (its writer's; for 'drop' '' = an abandoned
--   stage, whoever's)
-- 'open':
--   ARGV[4] the lease (ms); ARGV[5] '1' when ARGV[6] is the latest leaf
--   the caller expects (If-Match; a replace_history's expected_leaf), else
--   '0'; ARGV[7] the first message's parent ('latest', 'root' or 'id':
--   ARGV[8]), or 'whole': a replace_history, whose new history is staged
--   in keys of its own (the staged families) and renamed over the
--   session's at the commit, which removes every message and compaction
--   before (O(1) UNLINKs, as a clear; the ring of keys is kept); ARGV[9]
--   SESSION_MAX_MESSAGES; ARGV[10] the messages to come (0: unknown;
--   -1: none, a later part of an operation: {'ok', 'stage_lost'} when its
--   stage is gone, before any write);
--   ARGV[11] the ring's key ('' = none; an Idempotency-Key, or 'tx <id>'
--   for an operation); ARGV[12] the byte cap of a repeat's answer;
--   ARGV[13] the operation's digest ('' for an append); ARGV[14..17] the
--   first message's id and fingerprint, the last one's.
--   returns {'ok', 'open'|'started', staged, parts, last, created_at}:
--   staged and parts of a stage this token holds already (0 for a new
--   one), the id the next message goes under ('' for a root) and the
--   created_at of every message of the stage (ISO 8601, quoted as stored); {'ok', 'held'} (the first and last
--   messages are stored with these fields: a retry the caller answers),
--   the repeat {'dup', message...} as messages_append's (an operation's
--   even when none of its messages is left), {'ok',
--   'leaf_moved', leaf}, {'ok', 'unknown_parent', id}, or a refusal:
--   {'ok', 'stage_lost'} (ARGV[10] -1), or a refusal: 'id_conflict',
--   'session_full', 'operation_conflict', 'staging' or 'stage_abandoned'
--   (another stage), 'key_wrong_type'.
-- 'put':
--   ARGV[4] the lease (ms); ARGV[5] the part (0, 1, ...: this stage's
--   puts so far); ARGV[6] SESSION_MAX_MESSAGES; ARGV[7..] per message
--   four values: id, fingerprint, tokens and the message as stored
--   (messages.stored_json of messages_append's body under the previous
--   message, with the stage's created_at: the sidecar makes it, so that
--   a big message is copied once; its end is checked here).
--   returns {'ok', 'staged', n} (n staged in all), {'ok', 'repeat', n} for a part put
--   before (nothing written), {'ok', 'stage_lost'} (the stage is not this
--   token's: dropped as abandoned, or the session deleted), or a refusal:
--   'part_missing', 'id_conflict', 'session_full'.
-- 'commit':
--   ARGV[4] the parts put; ARGV[5] SESSION_COMPACT_AFTER_TOKENS (0 =
--   never); ARGV[6] the operation's digest ('' for an append); ARGV[7]
--   SEARCH_INDEX ('off', 'eager' or 'on-demand').
--   returns {'ok', 'stored'|'started', n} (n the messages it made
--   visible) then 'index_pending' when the user
--   has an index (the staged messages have no documents: the catch-up
--   writes them), {'ok', 'stage_lost'}, or a refusal: 'part_missing'; an
--   error for a whole stage with no message staged (nothing written).
--   Emits one message_appended (a range: messages.emit_appended) and,
--   for a user message, abort_cleared; compaction_suggested as an append.
-- 'drop':
--   ARGV[4] the most messages to remove.
--   returns {'ok', removed, done} (done 1: no stage of the token is left).
--   An abandoned stage's first drop takes it from its writer (its token
--   cleared): that writer's next step is stage_lost.
-- Each step is bounded by its caller: at most StageMessages messages and
-- StageBytes of them a put, DropChunk a drop; open and commit are O(1).
--- @include reply
--- @include clock
--- @include guard
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local fmt_int, node = msgtree.fmt_int, msgtree.node
local c = msgtree.open(session.open(KEYS, ARGV))
local step, token = ARGV[2], ARGV[3]

local refused = msgtree.begin(c, nil, true)
if refused then return refused end
local st = c.stage

-- The staged families of a whole new history (messages/keys.go), in the
-- order of the session's own: messages, tree, children, order.
local STAGED = { 'agent_session_msgs_staged', 'agent_session_msg_tree_staged', 'agent_session_msg_children_staged',
  'agent_session_msg_order_staged' }
local LIVE = { msgtree.MSGS, msgtree.MTREE, msgtree.MKIDS, msgtree.MORDER }
local KIND = { 'hash', 'hash', 'zset', 'zset' }

-- staged_keys are the keys of STAGED.
local function staged_keys()
  local out = {}
  for i, p in ipairs(STAGED) do out[i] = session.key(c, p) end
  return out
end

-- to_staged points c's messages keys at the staged ones (a whole new
-- history's puts write there), with an empty cache of nodes.
local function to_staged()
  local k = staged_keys()
  c.msgs, c.mtree, c.mkids, c.morder, c.nodes = k[1], k[2], k[3], k[4], {}
end

-- MAX_LIFE_MS: a stage lives at most this long from its open, however
-- often its steps renew the lease (a writer sending parts slowly holds the
-- session's other writes no longer).
local MAX_LIFE_MS = 60000

-- lease renews st's lease to ms from now, within MAX_LIFE_MS of its open.
local function lease(ms)
  st.until_ms = math.min(math.floor(session.now(c) / 1000) + ms, math.floor(tonumber(st.created) / 1000) + MAX_LIFE_MS)
end

-- expire_staged gives the messages keys the time the record has left, so
-- that staged messages end with the session even when no commit comes.
local function expire_staged()
  local p, t = redis.call('PTTL', c.record), session.ttl(c)
  for _, k in ipairs({ c.msgs, c.mtree, c.mkids, c.morder }) do
    if p > 0 then redis.call('PEXPIRE', k, p) elseif t > 0 then redis.call('EXPIRE', k, t) end
  end
end

-- created_at is the created_at of st's messages, quoted as stored.
local function created_at(st)
  return '"' .. clock.iso_time(tonumber(st.created)) .. '"'
end

local function part_missing(want, got)
  return reply.refused('part_missing', 'operation part ' .. fmt_int(got) .. ' came where part ' .. fmt_int(want) ..
    ' was due: send the parts in order from 0 (the operation stays staged until its last part)')
end

local function session_full(n, max)
  return reply.refused('session_full', 'session ' .. c.uid .. '/' .. c.sid .. ' holds ' .. fmt_int(c.count) ..
    ' messages and may hold at most ' .. fmt_int(max) .. ' (SESSION_MAX_MESSAGES); this append brings ' ..
    fmt_int(n) .. '; nothing was written')
end

if step == 'open' then
  if st then
    if st.token == token then return reply.ok('open', st.n, st.parts, st.last, created_at(st)) end
    return msgstage.staging(c, st)
  end
  local lease_ms, if_match, mode, pid = tonumber(ARGV[4]), ARGV[5] == '1' and ARGV[6] or nil, ARGV[7], ARGV[8]
  local max, total, key, max_bytes, digest = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11], tonumber(ARGV[12]), ARGV[13]
  local first, first_fp, last, last_fp = ARGV[14], ARGV[15], ARGV[16], ARGV[17]
  local whole = mode == 'whole'
  -- one read of the tree (its type checked): the ring's entry, the first
  -- and last messages, the parent
  local ids = { first, last, pid ~= '' and pid or (c.leaf or '') }
  local fields = { unpack(ids) }
  if key ~= '' then fields[#fields + 1] = ' k' .. key end
  local v = redis.pcall('HMGET', c.mtree, unpack(fields))
  if v.err then return guard.from_error(c.mtree, 'hash', v) end
  msgtree.cache(c, ids, v)
  local held = key ~= '' and msgtree.ring_held(v[4] or nil)
  if held then
    if digest ~= '' then
      local d, hids = string.match(held, '^(%S*) ?(.*)$')
      if d ~= digest then
        return reply.refused('operation_conflict', 'operation ' .. string.sub(key, 4) ..
          ' was already applied with another transaction; nothing was written')
      end
      held = hids
    end
    -- an operation answers as applied however its messages fared since
    -- (as messages_transaction); an append whose messages are all gone
    -- is made again
    local again = messages.dup_answer(c, held, max_bytes)
    if #again > 1 or digest ~= '' then return session.reply(c, again) end
  end
  -- a later part of an operation whose stage is gone opens none
  if total < 0 then return reply.ok('stage_lost') end
  if if_match and if_match ~= (c.leaf or '') then return reply.ok('leaf_moved', c.leaf or '') end
  -- a whole new history may hold the ids of the messages it replaces
  local nf, nl = not whole and node(c, first), not whole and node(c, last)
  if nf and nl and nf.fp == first_fp and nl.fp == last_fp then return reply.ok('held') end
  if nf then return messages.id_conflict(first) end
  if nl then return messages.id_conflict(last) end
  local parent = ''
  if whole then
    if total > max then
      return reply.refused('session_full', 'session ' .. c.uid .. '/' .. c.sid .. ' would hold ' .. fmt_int(total) ..
        ' messages and may hold at most ' .. fmt_int(max) .. ' (SESSION_MAX_MESSAGES); nothing was written')
    end
    for i, p in ipairs(STAGED) do session.use(c, p, KIND[i]) end
  elseif mode == 'latest' then
    parent = c.leaf or ''
  elseif mode == 'id' then
    if not node(c, pid) then return reply.ok('unknown_parent', pid) end
    parent = pid
  end
  if not whole and total > 0 and c.count + total > max then return session_full(total, max) end
  msgtree.use(c, true)
  refused = session.commit(c)
  if refused then return refused end
  -- what a stage dropped without its last step may have left
  if whole then redis.call('UNLINK', unpack(staged_keys())) end
  st = { token = token, seq0 = c.seq, n = 0, parent = parent, last = parent, created = c.now_text, user = false,
    parts = 0, whole = whole, key = key }
  lease(lease_ms)
  local started = session.finish(c, { 'msg_stage', msgstage.text(st) })
  return session.reply(c, reply.ok(started and 'started' or 'open', 0, 0, parent, created_at(st)))
end

if step == 'drop' then
  if not st or (token ~= '' and st.token ~= token) then return reply.ok(0, 1) end
  if token == '' then
    local abandoned = msgstage.staging(c, st)
    if abandoned[2] == 'staging' then return abandoned end
    -- the stage is taken from its writer before its first chunk goes: a
    -- step of the writer between two chunks then finds it lost, rather
    -- than staging on (and committing) what the drop removed
    if st.token ~= '' then
      st.token = ''
      redis.call('HSET', c.record, 'msg_stage', msgstage.text(st))
    end
  end
  if st.whole then
    -- the staged keys go, and their families off the record's fams (no
    -- slide or delete touches them then): a quiet commit, only checks
    for _, p in ipairs(STAGED) do session.drop(c, p) end
    refused = session.commit(c, { quiet = true })
    if refused then return refused end
    redis.call('UNLINK', unpack(staged_keys()))
    redis.call('HDEL', c.record, 'msg_stage')
    session.finish(c)
    return reply.ok(0, 1)
  end
  -- every message after seq0 is the stage's: no other write took a
  -- sequence number while it lived
  local ids = redis.call('ZRANGEBYSCORE', c.morder, '(' .. fmt_int(st.seq0), '+inf', 'LIMIT', 0, tonumber(ARGV[4]))
  if #ids > 0 then
    msgtree.cache(c, ids, msgtree.hmget_chunks(c.mtree, ids))
    local kids = {}
    for _, id in ipairs(ids) do
      local n = node(c, id)
      if n then kids[#kids + 1] = msgtree.kid_member(n) end
    end
    redis.call('HDEL', c.msgs, unpack(ids))
    redis.call('HDEL', c.mtree, unpack(ids))
    redis.call('ZREM', c.morder, unpack(ids))
    if #kids > 0 then redis.call('ZREM', c.mkids, unpack(kids)) end
  end
  if #ids < tonumber(ARGV[4]) then
    redis.call('HDEL', c.record, 'msg_stage')
    return reply.ok(#ids, 1)
  end
  return reply.ok(#ids, 0)
end

if not st or st.token ~= token then return reply.ok('stage_lost') end

if step == 'put' then
  local lease_ms, part, max = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  if part < st.parts then return reply.ok('repeat', st.n) end
  if part > st.parts then return part_missing(st.parts, part) end
  local batch = {}
  for i = 7, #ARGV, 4 do
    batch[#batch + 1] = { id = ARGV[i], fp = ARGV[i + 1], tokens = tonumber(ARGV[i + 2]), body = ARGV[i + 3] }
  end
  if (st.whole and 0 or c.count) + st.n + #batch > max then return session_full(st.n + #batch, max) end
  if st.whole then to_staged() end
  -- the batch's ids (none may be held, staged before included) and the
  -- parent's node, in one read
  local ids, seen = {}, {}
  for i, m in ipairs(batch) do
    if seen[m.id] then return messages.id_conflict(m.id) end
    seen[m.id], ids[i] = true, m.id
  end
  ids[#ids + 1] = st.last
  msgtree.cache(c, ids, msgtree.hmget_chunks(c.mtree, ids))
  for _, m in ipairs(batch) do
    if node(c, m.id) then return messages.id_conflict(m.id) end
  end
  local parent = node(c, st.last)
  local at = ',"created_at":' .. created_at(st) .. '}'
  local nodes, texts = {}, {}
  for i, m in ipairs(batch) do
    local n = msgtree.new_node(c, m.id, parent, m.tokens, st.seq0 + st.n + i, m.fp)
    c.nodes[m.id] = n
    -- the text the sidecar made ends as messages.stored_json would end it
    local tail = '"parent_id":' .. (n.parent == '' and 'null' or ('"' .. n.parent .. '"')) .. at
    local head = '{"id":"' .. m.id .. '"'
    if string.sub(m.body, -#tail) ~= tail or string.sub(m.body, 1, #head) ~= head then
      return redis.error_reply('ERR messages_stage: message ' .. m.id .. ' does not end with ' .. tail)
    end
    nodes[i], texts[i] = n, m.body
    st.user = st.user or messages.is_user(m.body)
    parent = n
  end
  msgtree.copy_path(c, nodes, texts)
  st.n, st.last, st.parts = st.n + #batch, parent.id, st.parts + 1
  lease(lease_ms)
  redis.call('HSET', c.record, 'msg_stage', msgstage.text(st))
  expire_staged()
  return reply.ok('staged', st.n)
end

-- 'commit'
local parts, suggest, digest, mode = tonumber(ARGV[4]), tonumber(ARGV[5]) or 0, ARGV[6], ARGV[7]
if parts ~= st.parts then return part_missing(st.parts, parts) end
-- a whole new history renames its staged keys, which its first put makes
if st.whole and st.n == 0 then
  return redis.error_reply('ERR messages_stage: a whole new history commits with no message staged; nothing was written')
end
-- the ring's entry of the key (a key whose messages are all gone since
-- leaves its old slot) and the slot the next key takes
local evicted, old_slot, _
if st.key ~= '' then
  local kf, sf = msgtree.ring_fields(c, st.key)
  local v = redis.call('HMGET', c.mtree, kf, sf)
  if v[1] then _, old_slot = msgtree.ring_held(v[1]) end
  evicted = v[2] or nil
end
msgtree.use(c, true)
events.use(c)
refused = session.commit(c)
if refused then return refused end
local last, count = st.last, c.count + st.n
-- the path's tokens before, for compaction_suggested: a whole new
-- history's are the old latest path's, as messages_transaction's
local before = 0
if suggest > 0 then before = messages.path_tokens(c, node(c, st.whole and c.leaf or st.parent)) end
if st.whole then
  -- the ring of keys goes with the new tree; then every message and
  -- compaction before goes (O(1) UNLINKs, Redis frees them), and the
  -- staged keys take the session's own keys' names
  local ring = msgtree.ring_kept(c)
  local sk = staged_keys()
  if #ring > 0 then redis.call('HSET', sk[2], unpack(ring)) end
  local live = { c.msgs, c.mtree, c.mkids, c.morder }
  redis.call('UNLINK', c.mcomp, unpack(live))
  if session.has(c, msgtree.MCOMP) then session.drop(c, msgtree.MCOMP) end
  if session.has(c, search.DOCS) then search.unindex_all(c, session.key(c, search.DOCS)) end
  for i = 1, 4 do
    redis.call('RENAME', sk[i], live[i])
    session.drop(c, STAGED[i])
  end
  c.nodes = {}
  if c.count > 0 then
    events.emit(c, 'message_deleted', 'message', nil, '{"cleared":true,"count":' .. fmt_int(c.count) ..
      ',"operation_id":' .. cjson.encode(string.sub(st.key, 4)) .. '}')
  end
  count = st.n
end
local fields = msgtree.leaf_fields(c, last, count)
fields[#fields + 1], fields[#fields + 2] = 'msg_seq', fmt_int(st.seq0 + st.n)
local tree, del = {}, {}
if st.key ~= '' then
  local range = '@' .. fmt_int(st.seq0 + 1) .. '-' .. fmt_int(st.seq0 + st.n)
  if digest ~= '' then range = digest .. ' ' .. range end
  local ring = msgtree.ring_put(c, st.key, range, evicted, old_slot, tree, del)
  fields[#fields + 1], fields[#fields + 2] = ring[1], ring[2]
  redis.call('HSET', c.mtree, unpack(tree))
  if #del > 0 then redis.call('HDEL', c.mtree, unpack(del)) end
end
redis.call('HDEL', c.record, 'msg_stage')
if st.n == 1 then
  events.emit(c, 'message_appended', 'message', last, redis.call('HGET', c.msgs, last))
else
  -- the ids while at most 100, else the first (range_json)
  local ids = redis.call('ZRANGEBYSCORE', c.morder, st.seq0 + 1, st.seq0 + st.n, 'LIMIT', 0, 101)
  events.emit(c, 'message_appended', 'message', last, messages.range_json(st.n, ids[1] or last, last, st.parent,
    st.n <= 100 and ids or nil))
end
if st.user and session.clear_abort(c) then events.emit(c, 'abort_cleared', 'state', nil, '{}') end
if suggest > 0 then
  messages.suggest_crossed(c, suggest, before, messages.path_tokens(c, node(c, last)))
end
local out = reply.ok('stored', st.n)
if session.finish(c, fields) then out[2] = 'started' end
-- the staged messages have no documents: for a user who has an index,
-- the catch-up writes them
if mode == 'eager' or (mode == 'on-demand' and c.marks.search) then out[#out + 1] = 'index_pending' end
return session.reply(c, out)
