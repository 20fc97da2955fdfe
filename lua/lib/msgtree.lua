-- msgtree: a session's messages as a tree (the messages module). c is a
-- session context (session.open) that msgtree.open has made ready: it adds
-- the messages keys of c's session and the call's cache of tree nodes
-- (another session's context, session.at, gets its own: messages.at). The
-- messages live in six of the session's own keys (session-scoped families
-- of redisstore's Families, so keys.session lists them: they slide and go
-- with the session; redisstore/keys_messages.go builds the same names for
-- Go), whatever the number of messages:
--   c.msgs    agent_session_msgs:<tag><u>:<s>  hash id -> the message as
--             answered (JSON; `item` as sent)
--   c.mtree   agent_session_msg_tree:...  hash id -> its node: "parent \t
--             jump \t depth \t cum \t seq \t tokens \t fingerprint" (parent
--             '' for a root; jump an ancestor, the node itself for a root;
--             depth 0 at a root; cum the tokens of the path root..id; seq
--             the append number)
--   c.mkids   agent_session_msg_children:...  zset of "<parent>\0<seq, 12
--             digits>\0<id>" (score 0, read by lex range): a message's
--             children oldest first ('' for roots)
--   c.morder  agent_session_msg_order:...  zset id -> seq: append order (the
--             newest remaining message)
--   c.mkeys   agent_session_msg_keys:...  the 1 000 newest Idempotency-Keys
--             of appends -> ids (a tagged ring, ring.lua)
--   c.mcomp   agent_session_compactions:...  hash: the compactions in
--             force, '<cid>' -> the compaction's JSON, '#<cid>' -> "from \t
--             to \t seq \t summary tokens", ' seq' -> compactions made so far
-- besides c.sdocs, the search index's documents of the session's messages
-- (search.lua), and in the record: msg_leaf (the latest leaf), msg_seq
-- (appends so far), message_count.
--
-- Jump pointers are skew-binary (Myers 1983): a node's jump is its
-- grandparent's jump's jump when the two jumps below it span equal depths,
-- else its parent. The ancestor at any depth is then O(log depth) node
-- reads away, so a page of a path costs O(limit + log n).
--- @include session
--- @include idindex

-- open gives c (a session context) the messages keys of its session and an
-- empty cache of nodes (c.nodes: id -> node, false for none), and returns it.
local function open(c)
  c.msgs = session.key(c, 'agent_session_msgs')
  c.mtree = session.key(c, 'agent_session_msg_tree')
  c.mkids = session.key(c, 'agent_session_msg_children')
  c.morder = session.key(c, 'agent_session_msg_order')
  c.mkeys = session.key(c, 'agent_session_msg_keys')
  c.mcomp = session.key(c, 'agent_session_compactions')
  c.nodes = {}
  return c
end

local function fmt_int(x) return string.format('%d', x) end

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
-- ('' for the roots).
local function children(c, id, limit)
  local out = {}
  local members = redis.call('ZRANGEBYLEX', c.mkids, '[' .. id .. '\0', '(' .. id .. '\1', 'LIMIT', 0, limit)
  for _, m in ipairs(members) do
    out[#out + 1] = string.sub(m, #id + 15)
  end
  return out
end

-- has_children reports whether message id has a child.
local function has_children(c, id)
  return #redis.call('ZRANGEBYLEX', c.mkids, '[' .. id .. '\0', '(' .. id .. '\1', 'LIMIT', 0, 1) > 0
end

-- rec_msgs reads the record's message fields: latest leaf (or nil), seq.
local function rec_msgs(c)
  local r = redis.call('HMGET', c.record, 'msg_leaf', 'msg_seq')
  local leaf = r[1]
  if not leaf or leaf == '' then leaf = nil end
  return leaf, tonumber(r[2] or '0') or 0
end

-- set_leaf makes id the latest leaf (nil: the newest remaining message,
-- or none) and writes message_count.
local function set_leaf(c, id)
  if not id then
    local last = redis.call('ZREVRANGE', c.morder, 0, 0)
    id = last[1]
  end
  local count = redis.call('ZCARD', c.morder)
  if id then
    redis.call('HSET', c.record, 'msg_leaf', id, 'message_count', count)
  else
    redis.call('HSET', c.record, 'message_count', count)
    redis.call('HDEL', c.record, 'msg_leaf')
  end
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
-- in the same order) into the keys of c's session.
local function copy_path(c, nodes, msgs)
  local tree, bodies, kids, order = {}, {}, {}, {}
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

return {
  open = open,
  fmt_int = fmt_int,
  node = node,
  node_text = node_text,
  ancestor = ancestor,
  new_node = new_node,
  kid_member = kid_member,
  children = children,
  has_children = has_children,
  rec_msgs = rec_msgs,
  set_leaf = set_leaf,
  remove_node = remove_node,
  subtree = subtree,
  add_tokens = add_tokens,
  path_nodes = path_nodes,
  hmget_chunks = hmget_chunks,
  copy_path = copy_path,
}
