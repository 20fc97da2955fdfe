-- msgtree: a session's messages as a tree (the messages module). c is a
-- session context (session.open) that msgtree.open has made ready: it adds
-- the messages keys of c's session and the call's cache of tree nodes
-- (another session's context, session.at, gets its own: messages.at). The
-- messages live in five of the session's own keys (session families of
-- redisstore's Families: the core slides and deletes those the session
-- has), whatever the number of messages:
--   c.msgs    agent_session_msgs:<tag><u>:<s>  hash id -> the message as
--             answered (JSON; `item` as sent)
--   c.mtree   agent_session_msg_tree:...  hash id -> its node: "parent \t
--             jump \t depth \t cum \t seq \t tokens \t fingerprint" (parent
--             '' for a root; jump an ancestor, the node itself for a root;
--             depth 0 at a root; cum the tokens of the path root..id; seq
--             the append number); and the ring of the 1 000 newest
--             Idempotency-Keys of appends and operation ids of
--             transactions: ' k<key>' -> "<value>\t<slot>", ' s<slot>' ->
--             key (the record's msg_keys counts the keys stored)
--   c.mkids   agent_session_msg_children:...  zset of "<parent>\0<seq, 12
--             digits>\0<id>" (score 0, read by lex range): a message's
--             children oldest first ('' for roots)
--   c.morder  agent_session_msg_order:...  zset id -> seq: append order (the
--             newest remaining message)
--   c.mcomp   agent_session_compactions:...  hash: the compactions in
--             force, '<cid>' -> the compaction's JSON, '#<cid>' -> "from \t
--             to \t seq \t summary tokens", ' seq' -> compactions made so far
-- besides c.sdocs, the search index's documents of the session's messages
-- (search.lua), and in the record (read by msgtree.begin): msg_leaf (the
-- latest leaf, '' for none), msg_seq (appends so far), message_count,
-- msg_keys (the ring's count) and msg_leaf_j ("<jump> <jump's jump>" of the
-- latest leaf: an append reads the three nodes it needs in one HMGET).
--
-- Jump pointers are skew-binary (Myers 1983): a node's jump is its
-- grandparent's jump's jump when the two jumps below it span equal depths,
-- else its parent. The ancestor at any depth is then O(log depth) node
-- reads away, so a page of a path costs O(limit + log n).
--- @include reply
--- @include guard
--- @include session
--- @include idindex
--- @include msgstage

-- The module's key families (messages/keys.go, redisstore/families.go).
local MSGS, MTREE, MKIDS, MORDER, MCOMP = 'agent_session_msgs', 'agent_session_msg_tree',
  'agent_session_msg_children', 'agent_session_msg_order', 'agent_session_compactions'
-- RING: the keys the ring keeps
local RING = 1000

local function fmt_int(x) return string.format('%d', x) end

-- open gives c (a session context) the messages keys of its session and an
-- empty cache of nodes (c.nodes: id -> node, false for none), and returns it.
local function open(c)
  c.msgs, c.mtree, c.mkids = session.key(c, MSGS), session.key(c, MTREE), session.key(c, MKIDS)
  c.morder, c.mcomp = session.key(c, MORDER), session.key(c, MCOMP)
  c.nodes = {}
  return c
end

-- begin is session.begin with the record's messages fields, then as
-- c.leaf (nil for none), c.seq, c.count, c.rkeys (the ring's count) and
-- c.leaf_j ({jump, jump's jump} of the latest leaf, or {}). A staged
-- append in progress refuses the write (staging), unless stage_op (the
-- stage's own steps, which find it in c.stage).
local function begin(c, fields, stage_op)
  local want = { 'msg_leaf', 'msg_seq', 'message_count', 'msg_keys', 'msg_leaf_j', 'msg_stage' }
  for _, f in ipairs(fields or {}) do want[#want + 1] = f end
  local refused = session.begin(c, want)
  if refused then return refused end
  local r = c.rec
  c.stage = msgstage.parse(r.msg_stage)
  if r.msg_stage and not c.stage then return guard.bad_field(c.record, 'msg_stage', 'a staged append') end
  if c.stage and not stage_op then return msgstage.staging(c, c.stage) end
  c.leaf = r.msg_leaf ~= '' and r.msg_leaf or nil
  c.seq, c.count, c.rkeys = tonumber(r.msg_seq or '0') or 0, tonumber(r.message_count or '0') or 0,
    tonumber(r.msg_keys or '0') or 0
  c.leaf_j = {}
  for id in string.gmatch(r.msg_leaf_j or '', '%S+') do c.leaf_j[#c.leaf_j + 1] = id end
  return nil
end

-- use declares the messages keys a write writes (session.use); tree_read:
-- the script read c.mtree first with a pcall (its type checked).
local function use(c, tree_read, compactions)
  session.use(c, MSGS, 'hash')
  session.use(c, MTREE, 'hash', tree_read)
  session.use(c, MKIDS, 'zset')
  session.use(c, MORDER, 'zset')
  if compactions then session.use(c, MCOMP, 'hash') end
end

-- emptied notes the messages keys a write emptied: with no message left,
-- the messages, children and order keys are gone (Redis deletes an empty
-- hash or set), and the tree too while no ring key is kept in it.
local function emptied(c, count)
  if count > 0 then return end
  session.drop(c, MSGS)
  session.drop(c, MKIDS)
  session.drop(c, MORDER)
  if c.rkeys == 0 then session.drop(c, MTREE) end
end

-- parse_node reads node text v of message id.
local function parse_node(c, id, v)
  local p, j, d, cum, q, t, fp = string.match(v, '^([^\t]*)\t([^\t]*)\t(%d+)\t(%-?%d+)\t(%d+)\t(%-?%d+)\t([^\t]*)$')
  if not p then error('node ' .. id .. ' of Redis key ' .. c.mtree .. ' is malformed') end
  return { id = id, parent = p, jump = j, depth = tonumber(d), cum = tonumber(cum), seq = tonumber(q),
    tokens = tonumber(t), fp = fp }
end

-- node returns the node of message id, or nil when the session has none.
local function node(c, id)
  if not id or id == '' then return nil end
  local n = c.nodes[id]
  if n ~= nil then return n or nil end
  local v = redis.call('HGET', c.mtree, id)
  if v then n = parse_node(c, id, v) else n = false end
  c.nodes[id] = n
  return n or nil
end

-- node_text is n as c.mtree stores it.
local function node_text(n)
  return table.concat({ n.parent, n.jump, fmt_int(n.depth), fmt_int(n.cum), fmt_int(n.seq), fmt_int(n.tokens), n.fp }, '\t')
end

-- ancestor returns the ancestor of n at depth d (n itself at its depth).
local function ancestor(c, n, d)
  while n.depth > d do
    local j = node(c, n.jump)
    if j and j.depth >= d and j.id ~= n.id then n = j else n = node(c, n.parent) end
  end
  return n
end

-- new_node is the node of a new message id under parent p (a node, or nil
-- for a root) with its tokens, seq and fingerprint.
local function new_node(c, id, p, tokens, seq, fp)
  if not p then
    return { id = id, parent = '', jump = id, depth = 0, cum = tokens, seq = seq, tokens = tokens, fp = fp }
  end
  local jump = p.id
  local jp = node(c, p.jump)
  local jjp = node(c, jp.jump)
  if p.depth - jp.depth == jp.depth - jjp.depth then jump = jjp.id end
  return { id = id, parent = p.id, jump = jump, depth = p.depth + 1, cum = p.cum + tokens, seq = seq,
    tokens = tokens, fp = fp }
end

-- kid_member is n's member of c.mkids.
local function kid_member(n)
  return n.parent .. '\0' .. string.format('%012d', n.seq) .. '\0' .. n.id
end

-- children returns up to limit ids of the children of id, oldest first
-- ('' for the roots); with after, only those whose sequence number is at
-- most after (a staged append's first message is a child of its parent,
-- and the newest: it comes last, and is left out).
local function children(c, id, limit, after)
  local out = {}
  local members = redis.call('ZRANGEBYLEX', c.mkids, '[' .. id .. '\0', '(' .. id .. '\1', 'LIMIT', 0,
    after and limit + 1 or limit)
  for _, m in ipairs(members) do
    if #out < limit and (not after or tonumber(string.sub(m, #id + 2, #id + 13)) <= after) then
      out[#out + 1] = string.sub(m, #id + 15)
    end
  end
  return out
end

-- has_children reports whether message id has a child.
local function has_children(c, id)
  return #redis.call('ZRANGEBYLEX', c.mkids, '[' .. id .. '\0', '(' .. id .. '\1', 'LIMIT', 0, 1) > 0
end

-- rec_msgs is the record's messages fields as begin read them: the
-- latest leaf (or nil) and seq.
local function rec_msgs(c)
  return c.leaf, c.seq
end

-- read_leaf is the latest leaf as the record holds it (nil: none), for a
-- read that did not begin (session.begin); it notes a staged append in
-- progress as c.staged_after (msgstage.visible).
local function read_leaf(c)
  local v = redis.call('HMGET', c.record, 'msg_leaf', 'msg_stage')
  local st = msgstage.parse(v[2] or nil)
  c.staged_after = st and st.seq0
  local leaf = v[1]
  if not leaf or leaf == '' then return nil end
  return leaf
end

-- cache keeps the node texts vals (HMGET of c.mtree) of ids: a missing one
-- as none.
local function cache(c, ids, vals)
  for i, id in ipairs(ids) do
    if id ~= '' and c.nodes[id] == nil then
      if vals[i] then c.nodes[id] = parse_node(c, id, vals[i]) else c.nodes[id] = false end
    end
  end
end

-- leaf_fields are the record fields (session.finish's) of a write that
-- leaves id (nil: none) the latest leaf and count messages in the
-- session: msg_leaf, message_count and msg_leaf_j (its jumps, read when
-- not in the cache).
local function leaf_fields(c, id, count)
  c.count = count
  if not id then return { 'msg_leaf', '', 'message_count', fmt_int(count), 'msg_leaf_j', '' } end
  local n = node(c, id)
  local j = node(c, n.jump)
  return { 'msg_leaf', id, 'message_count', fmt_int(count), 'msg_leaf_j', n.jump .. ' ' .. (j and j.jump or '') }
end

-- newest is the newest message left (its append number the highest), or
-- nil: the latest leaf once the leaf is gone and has no parent left.
local function newest(c)
  return redis.call('ZREVRANGE', c.morder, 0, 0)[1]
end

-- remove_node deletes message n from every messages key.
local function remove_node(c, n)
  redis.call('HDEL', c.msgs, n.id)
  redis.call('HDEL', c.mtree, n.id)
  redis.call('ZREM', c.mkids, kid_member(n))
  redis.call('ZREM', c.morder, n.id)
  c.nodes[n.id] = false
end

-- subtree returns the nodes of id's subtree, id's first (breadth first),
-- at most max of them; the second result is false when there were more.
local function subtree(c, root, max)
  local out, i = { root }, 1
  while i <= #out do
    for _, id in ipairs(children(c, out[i].id, max + 1)) do
      if #out >= max then return out, false end
      out[#out + 1] = node(c, id)
    end
    i = i + 1
  end
  return out, true
end

-- add_tokens adds delta to the path tokens of n's descendants (O(subtree),
-- at most the session's messages).
local function add_tokens(c, n, delta)
  local all = subtree(c, n, redis.call('ZCARD', c.morder))
  for i = 2, #all do
    local d = all[i]
    d.cum = d.cum + delta
    redis.call('HSET', c.mtree, d.id, node_text(d))
  end
end

-- path_nodes returns the nodes of the path root..n, root first (O(depth)).
local function path_nodes(c, n)
  local up = {}
  while n do
    up[#up + 1] = n
    n = node(c, n.parent)
  end
  local out = {}
  for i = #up, 1, -1 do out[#out + 1] = up[i] end
  return out
end

-- zadd_chunks runs ZADD key with args (score, member pairs), 1 000 pairs a call.
local function zadd_chunks(key, args)
  for i = 1, #args, 2000 do
    redis.call('ZADD', key, unpack(args, i, math.min(i + 1999, #args)))
  end
end

-- hmget_chunks returns HMGET key ids, 1 000 fields a call.
local function hmget_chunks(key, ids)
  local out = {}
  for i = 1, #ids, 1000 do
    local part = redis.call('HMGET', key, unpack(ids, i, math.min(i + 999, #ids)))
    for _, v in ipairs(part) do out[#out + 1] = v end
  end
  return out
end

-- copy_path writes nodes (a path, root first) and their messages (msgs,
-- in the same order) into the keys of c's session; tree: more fields of
-- c.mtree to set with them (the ring's), or nil.
local function copy_path(c, nodes, msgs, tree)
  local bodies, kids, order = {}, {}, {}
  tree = tree or {}
  for i, n in ipairs(nodes) do
    tree[#tree + 1], tree[#tree + 2] = n.id, node_text(n)
    bodies[#bodies + 1], bodies[#bodies + 2] = n.id, msgs[i]
    kids[#kids + 1], kids[#kids + 2] = 0, kid_member(n)
    order[#order + 1], order[#order + 2] = n.seq, n.id
  end
  idindex.hset_chunks(c.mtree, tree)
  idindex.hset_chunks(c.msgs, bodies)
  zadd_chunks(c.mkids, kids)
  zadd_chunks(c.morder, order)
end

-- Ring ------------------------------------------------------------------------

-- ring_fields are the c.mtree fields an HMGET reads for Idempotency-Key
-- (or operation) key: its entry and the slot the next key takes.
local function ring_fields(c, key)
  return ' k' .. key, ' s' .. fmt_int(c.rkeys % RING)
end

-- ring_held reads a ring entry as HMGET answered it: the value, and its
-- slot (nil: none).
local function ring_held(v)
  if not v then return nil end
  return string.match(v, '^(.*)\t(%d+)$')
end

-- ring_kept is the ring's fields (" s<slot>" and " k<key>" pairs), to
-- write again after a write unlinks the tree (a transaction that replaces
-- every message keeps its keys): at most 2 000 fields in two HMGETs.
local function ring_kept(c)
  local n = math.min(c.rkeys, RING)
  if n == 0 then return {} end
  local slots = {}
  for i = 0, n - 1 do slots[#slots + 1] = ' s' .. fmt_int(i) end
  local keys = redis.call('HMGET', c.mtree, unpack(slots))
  local kf = {}
  for i, k in ipairs(keys) do
    if k then kf[#kf + 1] = ' k' .. k else kf[#kf + 1] = ' ' end
  end
  local vals = redis.call('HMGET', c.mtree, unpack(kf))
  local out = {}
  for i, k in ipairs(keys) do
    if k and vals[i] then
      out[#out + 1], out[#out + 2] = slots[i], k
      out[#out + 1], out[#out + 2] = kf[i], vals[i]
    end
  end
  return out
end

-- ring_put adds to tree (copy_path's extra fields) and to del the fields
-- that store key -> value in the next slot, the key that slot held
-- (evicted, from the HMGET) leaving, and returns the record fields of the
-- ring's count. old_slot: the slot key held before (a key stored again,
-- its messages gone), which it leaves.
local function ring_put(c, key, value, evicted, old_slot, tree, del)
  local slot = fmt_int(c.rkeys % RING)
  tree[#tree + 1], tree[#tree + 2] = ' k' .. key, value .. '\t' .. slot
  tree[#tree + 1], tree[#tree + 2] = ' s' .. slot, key
  if evicted and evicted ~= key then del[#del + 1] = ' k' .. evicted end
  if old_slot and old_slot ~= slot then del[#del + 1] = ' s' .. old_slot end
  c.rkeys = c.rkeys + 1
  return { 'msg_keys', fmt_int(c.rkeys) }
end

return {
  MSGS = MSGS,
  MTREE = MTREE,
  MKIDS = MKIDS,
  MORDER = MORDER,
  MCOMP = MCOMP,
  open = open,
  begin = begin,
  use = use,
  emptied = emptied,
  fmt_int = fmt_int,
  node = node,
  node_text = node_text,
  ancestor = ancestor,
  new_node = new_node,
  kid_member = kid_member,
  children = children,
  has_children = has_children,
  rec_msgs = rec_msgs,
  read_leaf = read_leaf,
  cache = cache,
  leaf_fields = leaf_fields,
  newest = newest,
  remove_node = remove_node,
  subtree = subtree,
  add_tokens = add_tokens,
  path_nodes = path_nodes,
  hmget_chunks = hmget_chunks,
  copy_path = copy_path,
  ring_fields = ring_fields,
  ring_held = ring_held,
  ring_kept = ring_kept,
  ring_put = ring_put,
}
