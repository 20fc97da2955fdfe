--! prelude: session_lib
-- messages_lib.lua: helpers of the messages scripts (a session's messages as
-- a tree). They run with the KEYS and first ARGVs of every session script
-- (session_lib.lua; its retarget lets fork and split write another session
-- of the user) and keep a session's messages in five keys of its own,
-- whatever the number of messages (session_lib.lua derives their names):
--   K_MSGS    hash id -> the message as answered (JSON; `item` as sent)
--   K_MTREE   hash id -> its node: "parent \t jump \t depth \t cum \t seq \t
--             tokens \t fingerprint" (parent '' for a root; jump an
--             ancestor, the node itself for a root; depth 0 at a root; cum
--             the tokens of the path root..id; seq the append number)
--   K_MKIDS   zset of "<parent>\0<seq, 12 digits>\0<id>" (score 0, read by
--             lex range): a message's children oldest first ('' for roots)
--   K_MORDER  zset id -> seq: append order (the newest remaining message)
--   K_MKEYS   hash: the 1 000 newest Idempotency-Keys of appends -> ids
--   K_SDOCS   hash: the search index's documents of the session's
--             messages (session_lib.lua, "Search index")
--   K_MCOMP   hash: the compactions in force, '<cid>' -> the compaction's
--             JSON, '#<cid>' -> "from \t to \t seq \t summary tokens",
--             ' seq' -> compactions made so far
-- and in the record: msg_leaf (the latest leaf), msg_seq (appends so far),
-- message_count.
--
-- Jump pointers are skew-binary (Myers 1983): a node's jump is its
-- grandparent's jump's jump when the two jumps below it span equal depths,
-- else its parent. The ancestor at any depth is then O(log depth) node
-- reads away, so a page of a path costs O(limit + log n).

local MAX_KEYS = 1000 -- Idempotency-Keys remembered per session

--! per-call
local NODES = {} -- the nodes read or written by this script, by id
--! end per-call

-- parse_node reads node text v of message id.
local function parse_node(id, v)
  local p, j, d, c, q, t, fp = string.match(v, '^([^\t]*)\t([^\t]*)\t(%d+)\t(%-?%d+)\t(%d+)\t(%-?%d+)\t([^\t]*)$')
  if not p then error('node ' .. id .. ' of Redis key ' .. K_MTREE .. ' is malformed') end
  return { id = id, parent = p, jump = j, depth = tonumber(d), cum = tonumber(c), seq = tonumber(q),
    tokens = tonumber(t), fp = fp }
end

-- node returns the node of message id, or nil when the session has none.
local function node(id)
  if not id or id == '' then return nil end
  local n = NODES[id]
  if n ~= nil then return n or nil end
  local v = redis.call('HGET', K_MTREE, id)
  if v then n = parse_node(id, v) else n = false end
  NODES[id] = n
  return n or nil
end

local function fmt_int(x) return string.format('%d', x) end

-- node_text is n as K_MTREE stores it.
local function node_text(n)
  return table.concat({ n.parent, n.jump, fmt_int(n.depth), fmt_int(n.cum), fmt_int(n.seq), fmt_int(n.tokens), n.fp }, '\t')
end

-- ancestor returns the ancestor of n at depth d (n itself at its depth).
local function ancestor(n, d)
  while n.depth > d do
    local j = node(n.jump)
    if j and j.depth >= d and j.id ~= n.id then n = j else n = node(n.parent) end
  end
  return n
end

-- new_node is the node of a new message id under parent p (a node, or nil
-- for a root) with its tokens, seq and fingerprint.
local function new_node(id, p, tokens, seq, fp)
  if not p then
    return { id = id, parent = '', jump = id, depth = 0, cum = tokens, seq = seq, tokens = tokens, fp = fp }
  end
  local jump = p.id
  local jp = node(p.jump)
  local jjp = node(jp.jump)
  if p.depth - jp.depth == jp.depth - jjp.depth then jump = jjp.id end
  return { id = id, parent = p.id, jump = jump, depth = p.depth + 1, cum = p.cum + tokens, seq = seq,
    tokens = tokens, fp = fp }
end

-- kid_member is n's member of K_MKIDS.
local function kid_member(n)
  return n.parent .. '\0' .. string.format('%012d', n.seq) .. '\0' .. n.id
end

-- children returns up to limit ids of the children of id, oldest first
-- ('' for the roots); from a member after which to continue (exclusive), or nil.
local function children(id, limit)
  local out = {}
  local members = redis.call('ZRANGEBYLEX', K_MKIDS, '[' .. id .. '\0', '(' .. id .. '\1', 'LIMIT', 0, limit)
  for _, m in ipairs(members) do
    out[#out + 1] = string.sub(m, #id + 15)
  end
  return out
end

-- has_children reports whether message id has a child.
local function has_children(id)
  return #redis.call('ZRANGEBYLEX', K_MKIDS, '[' .. id .. '\0', '(' .. id .. '\1', 'LIMIT', 0, 1) > 0
end

-- stored_json is the message as stored: body (a JSON object from the
-- sidecar, without parent_id and created_at) with them appended.
local function stored_json(body, parent, created_at)
  local p = 'null'
  if parent ~= '' then p = '"' .. parent .. '"' end
  local close = string.find(body, '}%s*$')
  local sep = ','
  if string.find(string.sub(body, 1, close - 1), '^%s*{%s*$') then sep = '' end
  return string.sub(body, 1, close - 1) .. sep .. '"parent_id":' .. p .. ',"created_at":' .. created_at .. '}'
end

-- rec_msgs reads the record's message fields: latest leaf (or nil), seq.
local function rec_msgs()
  local r = redis.call('HMGET', K_RECORD, 'msg_leaf', 'msg_seq')
  local leaf = r[1]
  if not leaf or leaf == '' then leaf = nil end
  return leaf, tonumber(r[2] or '0') or 0
end

-- set_leaf makes id the latest leaf (nil: the newest remaining message,
-- or none) and writes message_count.
local function set_leaf(id)
  if not id then
    local last = redis.call('ZREVRANGE', K_MORDER, 0, 0)
    id = last[1]
  end
  local count = redis.call('ZCARD', K_MORDER)
  if id then
    redis.call('HSET', K_RECORD, 'msg_leaf', id, 'message_count', count)
  else
    redis.call('HSET', K_RECORD, 'message_count', count)
    redis.call('HDEL', K_RECORD, 'msg_leaf')
  end
end

-- remove_node deletes message n from every messages key.
local function remove_node(n)
  redis.call('HDEL', K_MSGS, n.id)
  redis.call('HDEL', K_MTREE, n.id)
  redis.call('ZREM', K_MKIDS, kid_member(n))
  redis.call('ZREM', K_MORDER, n.id)
  NODES[n.id] = false
end

-- subtree returns the nodes of id's subtree, id's first (breadth first),
-- at most max of them; the second result is false when there were more.
local function subtree(root, max)
  local out, i = { root }, 1
  while i <= #out do
    for _, c in ipairs(children(out[i].id, max + 1)) do
      if #out >= max then return out, false end
      out[#out + 1] = node(c)
    end
    i = i + 1
  end
  return out, true
end

-- check_keys is guard('keep') over the messages keys: nil, or the refusal.
local function check_keys()
  return guard('keep', { K_MSGS, 'hash' }, { K_MTREE, 'hash' }, { K_MKIDS, 'zset' },
    { K_MORDER, 'zset' }, { K_MKEYS, 'hash' }, { K_MCOMP, 'hash' }, { K_SDOCS, 'hash' }, { K_SSTATS, 'hash' })
end

-- messages_exist reports whether the session has a message.
local function messages_exist()
  return redis.call('EXISTS', K_MORDER) == 1
end

-- keyed returns the stored messages of an append made with Idempotency-Key
-- key, or nil when the ring does not hold the key (or they are all gone).
local function keyed(key)
  if key == '' then return nil end
  local ids = redis.call('HGET', K_MKEYS, key)
  if not ids then return nil end
  local out = {}
  for id in string.gmatch(string.match(ids, '^[^\t]*'), '%S+') do
    local m = redis.call('HGET', K_MSGS, id)
    if m then out[#out + 1] = m end
  end
  -- every message of that append is gone since: the key is stale, and the
  -- append is made again (its slot in the ring is taken anew)
  if #out == 0 then return nil end
  return out
end

-- remember stores Idempotency-Key key -> "ids \t slot" in the ring of the
-- MAX_KEYS newest keys (field ' n' counts the keys stored, ' <n mod
-- MAX_KEYS>' names the key stored n-th, which the next key of that slot
-- evicts unless that key was stored again in a later slot since; a leading
-- space cannot start a key). Returns whether it created the hash.
local function remember(key, ids)
  if key == '' then return false end
  local v = redis.call('HMGET', K_MKEYS, ' n')
  local kept = tonumber(v[1] or '0') or 0
  local n = fmt_int(kept % MAX_KEYS)
  local slot = ' ' .. n
  local evict = redis.call('HGET', K_MKEYS, slot)
  if evict then
    local held = redis.call('HGET', K_MKEYS, evict)
    local at = held and string.match(held, '\t(%d+)$')
    if held and (not at or at == n) then redis.call('HDEL', K_MKEYS, evict) end
  end
  redis.call('HSET', K_MKEYS, key, table.concat(ids, ' ') .. '\t' .. n, slot, key, ' n', fmt_int(kept + 1))
  return kept == 0
end

-- append_messages is an append of one message or a chained batch, all
-- checks first. batch: {id=, fp=, tokens=, body=} in order; mode 'latest'
-- (parent: the latest leaf), 'root' or 'id' (parent pid); if_match nil or
-- the leaf the caller expects; max the most messages a session holds; key
-- the Idempotency-Key or ''. Returns the script's reply (messages_append.lua).
-- is_user reports whether stored message json has the role user: the
-- sidecar writes {"id":"...","role":"..." first, and neither an id nor a
-- role needs an escape.
local function is_user(json)
  return string.match(json, '^{"id":"[^"]*","role":"user"') ~= nil
end

-- emit_deleted emits message_deleted for the messages of ids (the first
-- one named, the rest its descendants), with extra JSON fields after them.
local function emit_deleted(first, ids, extra)
  local quoted = {}
  for i, id in ipairs(ids) do quoted[i] = '"' .. id .. '"' end
  return emit('message_deleted', 'message', first,
    '{"id":"' .. first .. '","ids":[' .. table.concat(quoted, ',') .. ']' .. (extra or '') .. '}')
end

-- path_tokens (defined with the compactions below) is the tokens of the
-- path root..n as read, plus the frozen system prompt's.
local path_tokens

-- suggest_crossed emits compaction_suggested when the latest path's tokens
-- went from before to after across threshold (0 = never) upward.
local function suggest_crossed(threshold, before, after)
  if threshold > 0 and before <= threshold and after > threshold then
    emit('compaction_suggested', 'message', nil,
      '{"total_tokens":' .. fmt_int(after) .. ',"threshold":' .. fmt_int(threshold) .. '}')
  end
end

local function append_messages(batch, mode, pid, if_match, max, key, suggest)
  local refused = check_keys() or check_terms(batch)
  if refused then return refused end
  local bad = check_finish(nil, false, false)
  if bad then return { -1, 'wrong_type', bad } end
  local again = keyed(key)
  if again then
    local out = { 0 }
    for _, m in ipairs(again) do out[#out + 1] = m end
    return out
  end
  local leaf, seq = rec_msgs()
  if if_match and if_match ~= (leaf or '') then return { -1, 'leaf_moved', leaf or '' } end
  -- ids the session holds already: all of them identical is a retry
  local held = 0
  for i, m in ipairs(batch) do
    local n = node(m.id)
    if n then
      held = held + 1
      local want_parent
      if i > 1 then want_parent = batch[i - 1].id
      elseif mode == 'root' then want_parent = ''
      elseif mode == 'id' then want_parent = pid end
      if n.fp ~= m.fp or (want_parent and n.parent ~= want_parent) then
        return { -1, 'id_conflict', m.id }
      end
    end
  end
  if held > 0 then
    if held < #batch then
      for _, m in ipairs(batch) do
        if not node(m.id) then return { -1, 'id_conflict', m.id } end
      end
    end
    local out = { 0 }
    for _, m in ipairs(batch) do out[#out + 1] = redis.call('HGET', K_MSGS, m.id) end
    return out
  end
  local parent
  if mode == 'latest' then
    parent = node(leaf)
  elseif mode == 'id' then
    parent = node(pid)
    if not parent then return { -1, 'unknown_parent', pid } end
  end
  local count = redis.call('ZCARD', K_MORDER)
  if count + #batch > max then return { -1, 'session_full', fmt_int(count) } end
  suggest = suggest or 0
  local before = 0
  if suggest > 0 then before = path_tokens(node(leaf)) end

  -- the writes
  local now = now_us()
  local created_at = '"' .. iso_time(now) .. '"'
  local out, ids = { 1 }, {}
  for _, m in ipairs(batch) do
    seq = seq + 1
    local n = new_node(m.id, parent, m.tokens, seq, m.fp)
    NODES[m.id] = n
    local json = stored_json(m.body, n.parent, created_at)
    redis.call('HSET', K_MTREE, m.id, node_text(n))
    redis.call('HSET', K_MSGS, m.id, json)
    redis.call('ZADD', K_MKIDS, 0, kid_member(n))
    redis.call('ZADD', K_MORDER, seq, m.id)
    if m.spec then index_doc(K_SDOCS, 'message', m.id, m.spec, m.len, m.preview, now) end
    out[#out + 1] = json
    ids[#ids + 1] = m.id
    parent = n
  end
  redis.call('HSET', K_RECORD, 'msg_seq', fmt_int(seq))
  set_leaf(parent.id)
  local new_ring = remember(key, ids)
  -- one message_appended each; a user message clears a pending abort
  local user = false
  for i = 2, #out do
    emit('message_appended', 'message', ids[i - 1], out[i])
    user = user or is_user(out[i])
  end
  if user and clear_abort() then emit('abort_cleared', 'state', nil, '{}') end
  if suggest > 0 then suggest_crossed(suggest, before, path_tokens(parent)) end
  local _, started = finish_write(false, count == 0 or new_ring)
  out[1] = stored_flag(started)
  return out
end

-- write_checks makes the checks of every messages write before its first
-- write: nil, or the reply refusing it.
local function write_checks()
  local refused = check_keys()
  if refused then return refused end
  local bad = check_finish(nil, false, false)
  if bad then return { -1, 'wrong_type', bad } end
  return nil
end

-- add_tokens adds delta to the path tokens of n's descendants (O(subtree),
-- at most the session's messages).
local function add_tokens(n, delta)
  local all = subtree(n, redis.call('ZCARD', K_MORDER))
  for i = 2, #all do
    local d = all[i]
    d.cum = d.cum + delta
    redis.call('HSET', K_MTREE, d.id, node_text(d))
  end
end

-- zadd_chunks runs ZADD key with args (score, member pairs), 1 000 pairs a call.
local function zadd_chunks(key, args)
  for i = 1, #args, 2000 do
    redis.call('ZADD', key, unpack(args, i, math.min(i + 1999, #args)))
  end
end

-- path_nodes returns the nodes of the path root..n, root first (O(depth)).
local function path_nodes(n)
  local up = {}
  while n do
    up[#up + 1] = n
    n = node(n.parent)
  end
  local out = {}
  for i = #up, 1, -1 do out[#out + 1] = up[i] end
  return out
end

-- copy_path writes nodes (a path, root first) and their messages (msgs,
-- in the same order) into the current session's keys.
local function copy_path(nodes, msgs)
  local tree, bodies, kids, order = {}, {}, {}, {}
  for i, n in ipairs(nodes) do
    tree[#tree + 1], tree[#tree + 2] = n.id, node_text(n)
    bodies[#bodies + 1], bodies[#bodies + 2] = n.id, msgs[i]
    kids[#kids + 1], kids[#kids + 2] = 0, kid_member(n)
    order[#order + 1], order[#order + 2] = n.seq, n.id
  end
  hset_chunks(K_MTREE, tree)
  hset_chunks(K_MSGS, bodies)
  zadd_chunks(K_MKIDS, kids)
  zadd_chunks(K_MORDER, order)
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

-- new_session_checks retargets to session sid and checks it can be created
-- there with key (an Idempotency-Key, or ''): nil when it can; 'again'
-- when it was created by that key (a retry); else the refusal. It leaves
-- the script retargeted to sid.
local function new_session_checks(sid, key)
  retarget(sid)
  if session_exists() then
    if key ~= '' and redis.call('HGET', K_RECORD, 'create_key') == key then return 'again' end
    return { -1, 'session_exists', sid }
  end
  return write_checks()
end

-- Compactions ------------------------------------------------------------------

-- compactions returns the compactions in force, oldest first: {id, from,
-- to, seq, stokens (the summary's tokens), json}. Their number is at most
-- the cap of messages_compact.lua, so one HGETALL is bounded.
local function compactions()
  if redis.call('EXISTS', K_MCOMP) == 0 then return {} end
  local all = redis.call('HGETALL', K_MCOMP)
  local by, out = {}, {}
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    local b = string.byte(f, 1)
    if b == 35 then -- '#': the meta of compaction f[2..]
      local from, to, seq, st = string.match(v, '^([^\t]*)\t([^\t]*)\t(%d+)\t(%d+)$')
      local c = by[string.sub(f, 2)] or {}
      c.id, c.from, c.to, c.seq, c.stokens = string.sub(f, 2), from, to, tonumber(seq), tonumber(st)
      by[c.id] = c
    elseif b ~= 32 then -- not ' seq'
      local c = by[f] or {}
      c.json = v
      by[f] = c
    end
  end
  for _, c in pairs(by) do
    if c.from and c.json then out[#out + 1] = c end
  end
  table.sort(out, function(a, b) return a.seq < b.seq end)
  return out
end

-- on_path returns the nodes (from, to) of compaction c when its range lies
-- on the path root..leaf, else nil.
local function on_path(c, leaf)
  local to = node(c.to)
  if not to or to.depth > leaf.depth or ancestor(leaf, to.depth).id ~= to.id then return nil end
  local from = node(c.from)
  if not from or from.depth > to.depth then return nil end
  return from, to
end

-- overlays returns the compactions on the path root..leaf, shallowest
-- first, each {c=, fd=, td= (depths), tokens= (of the range)}.
local function overlays(leaf)
  local out = {}
  for _, c in ipairs(compactions()) do
    local from, to = on_path(c, leaf)
    if from then
      out[#out + 1] = { c = c, fd = from.depth, td = to.depth, tokens = to.cum - from.cum + from.tokens }
    end
  end
  table.sort(out, function(a, b) return a.fd < b.fd end)
  return out
end

path_tokens = function(n)
  local t = 0
  if n then
    t = n.cum
    for _, o in ipairs(overlays(n)) do t = t - o.tokens + o.c.stokens end
  end
  local prompt = redis.pcall('HGET', K_PROMPT, 'tokens')
  if type(prompt) == 'string' then t = t + (tonumber(prompt) or 0) end
  return t
end

-- synthetic is the message that stands for overlay o on a path.
local function synthetic(o)
  local c = o.c
  return '{"id":"compaction:' .. c.id .. '","role":"system","content":' .. field_raw(c.json, 'summary') ..
    ',"compaction":{"id":"' .. c.id .. '","from_id":"' .. c.from .. '","to_id":"' .. c.to .. '"},"tokens":' ..
    fmt_int(c.stokens) .. '}'
end

-- drop_compactions deletes the compactions with an endpoint in gone (a set
-- of message ids).
local function drop_compactions(gone)
  if redis.call('EXISTS', K_MCOMP) == 0 then return end
  for _, c in ipairs(compactions()) do
    if gone[c.from] or gone[c.to] then redis.call('HDEL', K_MCOMP, c.id, '#' .. c.id) end
  end
end

