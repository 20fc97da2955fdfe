-- messages: the writes of a session's messages (the messages module) and
-- its compactions, over the tree of msgtree.lua. c is a session context
-- made ready by msgtree.open (messages.at for another session of the user:
-- fork and split write a new one).
--- @include reply
--- @include json
--- @include clock
--- @include ring
--- @include session
--- @include events
--- @include search
--- @include msgtree

local MAX_KEYS = 1000 -- Idempotency-Keys remembered per session (c.mkeys)
local node, fmt_int = msgtree.node, msgtree.fmt_int

-- at is the context of session sid of c's user, with its messages keys.
local function at(c, sid)
  return msgtree.open(session.at(c, sid))
end

-- stored_json is the message as stored: body (a JSON object from the
-- sidecar, without parent_id and created_at) with them appended.
local function stored_json(body, parent, created_at)
  local p = 'null'
  if parent ~= '' then p = '"' .. parent .. '"' end
  -- the closing brace, found from the end (an unanchored pattern would try
  -- every byte of the body: ~50 instructions a byte, most of a large
  -- append's time)
  local close = #body
  while close > 0 and string.find(string.sub(body, close, close), '^%s$') do close = close - 1 end
  local sep = ','
  if string.find(body, '^%s*{%s*}') then sep = '' end
  return string.sub(body, 1, close - 1) .. sep .. '"parent_id":' .. p .. ',"created_at":' .. created_at .. '}'
end

-- check_keys is session.guard('keep') over the messages keys: nil, or the
-- refusal.
local function check_keys(c)
  return (session.guard(c, 'keep', { c.msgs, 'hash' }, { c.mtree, 'hash' }, { c.mkids, 'zset' },
    { c.morder, 'zset' }, { c.mkeys, 'hash' }, { c.mcomp, 'hash' }, { c.sdocs, 'hash' }, { c.slist, 'zset' }))
end

-- write_checks makes the checks of every messages write before its first
-- write: nil, or the reply refusing it.
local function write_checks(c)
  local refused = check_keys(c)
  if refused then return refused end
  local bad = session.check_finish(c, nil, false, false)
  if bad then return reply.bad_key(bad) end
  return nil
end

-- has_children refuses a delete or pop of message id, which has children.
local function has_children(id)
  return reply.refused('has_children', 'message ' .. id ..
    ' has children: delete them first, or pass ?subtree=true to delete it with every descendant')
end

-- dup_answer is a repeat's answer {'dup', message...}: the messages of ids
-- (space-separated) still held, in order, while their bytes (counted with
-- HSTRLEN before each is read) stay within max_bytes, the first always;
-- then 'truncated' when the cap cut it (the Go side's Sidecar-Truncated).
local function dup_answer(c, ids, max_bytes)
  local out, size = reply.dup(), 0
  for id in string.gmatch(ids, '%S+') do
    local n = redis.call('HSTRLEN', c.msgs, id)
    if n > 0 then
      size = size + n + 1
      if size > max_bytes and #out > 1 then
        out[#out + 1] = 'truncated'
        return out
      end
      out[#out + 1] = redis.call('HGET', c.msgs, id)
    end
  end
  return out
end

-- keyed returns the stored messages of an append made with Idempotency-Key
-- key, or nil when the ring does not hold the key (or they are all gone).
local function keyed(c, key, max_bytes)
  if key == '' then return nil end
  local ids = ring.get(c.mkeys, key, true)
  if not ids then return nil end
  local out = dup_answer(c, ids, max_bytes)
  -- every message of that append is gone since: the key is stale, and the
  -- append is made again (its slot in the ring is taken anew)
  if #out == 1 then return nil end
  return out
end

-- remember stores Idempotency-Key key -> the ids (space-separated) in the
-- session's ring of the MAX_KEYS newest keys (tagged: a key stored again
-- keeps its newer slot). Returns whether it created the hash.
local function remember(c, key, ids)
  if key == '' then return false end
  return ring.put(c.mkeys, key, table.concat(ids, ' '), MAX_KEYS, true)
end

-- is_user reports whether stored message json has the role user: the
-- sidecar writes {"id":"...","role":"..." first, and neither an id nor a
-- role needs an escape.
local function is_user(json)
  return string.match(json, '^{"id":"[^"]*","role":"user"') ~= nil
end

-- emit_deleted emits message_deleted for the messages of ids (the first
-- one named, the rest its descendants), with extra JSON fields after them.
local function emit_deleted(c, first, ids, extra)
  local quoted = {}
  for i, id in ipairs(ids) do quoted[i] = '"' .. id .. '"' end
  return events.emit(c, 'message_deleted', 'message', first,
    '{"id":"' .. first .. '","ids":[' .. table.concat(quoted, ',') .. ']' .. (extra or '') .. '}')
end

-- new_session_checks checks that session sid of c's user can be created
-- with key (an Idempotency-Key, or ''). Returns sid's context (messages.at)
-- and nil when it can; 'again' when it was created by that key (a retry);
-- else the refusal (reply.lua: session_exists, key_wrong_type).
local function new_session_checks(c, sid, key)
  local to = at(c, sid)
  if session.exists(to) then
    if key ~= '' and redis.call('HGET', to.record, 'create_key') == key then return to, 'again' end
    return to, reply.refused('session_exists', 'session ' .. c.uid .. '/' .. sid .. ' already exists; nothing was written')
  end
  return to, write_checks(to)
end

-- Compactions ------------------------------------------------------------------

-- compactions returns the compactions in force, oldest first: {id, from,
-- to, seq, stokens (the summary's tokens), json}. Their number is at most
-- the cap of messages_compact.lua, so one HGETALL is bounded.
local function compactions(c)
  if redis.call('EXISTS', c.mcomp) == 0 then return {} end
  local all = redis.call('HGETALL', c.mcomp)
  local by, out = {}, {}
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    local b = string.byte(f, 1)
    if b == 35 then -- '#': the meta of compaction f[2..]
      local from, to, seq, st = string.match(v, '^([^\t]*)\t([^\t]*)\t(%d+)\t(%d+)$')
      local cp = by[string.sub(f, 2)] or {}
      cp.id, cp.from, cp.to, cp.seq, cp.stokens = string.sub(f, 2), from, to, tonumber(seq), tonumber(st)
      by[cp.id] = cp
    elseif b ~= 32 then -- not ' seq'
      local cp = by[f] or {}
      cp.json = v
      by[f] = cp
    end
  end
  for _, cp in pairs(by) do
    if cp.from and cp.json then out[#out + 1] = cp end
  end
  table.sort(out, function(a, b) return a.seq < b.seq end)
  return out
end

-- on_path returns the nodes (from, to) of compaction cp when its range lies
-- on the path root..leaf, else nil.
local function on_path(c, cp, leaf)
  local to = node(c, cp.to)
  if not to or to.depth > leaf.depth or msgtree.ancestor(c, leaf, to.depth).id ~= to.id then return nil end
  local from = node(c, cp.from)
  if not from or from.depth > to.depth then return nil end
  return from, to
end

-- overlays returns the compactions on the path root..leaf, shallowest
-- first, each {c=, fd=, td= (depths), tokens= (of the range)}: c the
-- compaction (compactions).
local function overlays(c, leaf)
  local out = {}
  for _, cp in ipairs(compactions(c)) do
    local from, to = on_path(c, cp, leaf)
    if from then
      out[#out + 1] = { c = cp, fd = from.depth, td = to.depth, tokens = to.cum - from.cum + from.tokens }
    end
  end
  table.sort(out, function(a, b) return a.fd < b.fd end)
  return out
end

-- prompt_tokens is the tokens of the session's frozen system prompt (the
-- blocks module's agent_session_prompt hash), 0 without one.
local function prompt_tokens(c)
  local prompt = redis.pcall('HGET', session.key(c, 'agent_session_prompt'), 'tokens')
  if type(prompt) == 'string' then return tonumber(prompt) or 0 end
  return 0
end

-- path_tokens is the tokens of the path root..n as read, plus the frozen
-- system prompt's.
local function path_tokens(c, n)
  local t = 0
  if n then
    t = n.cum
    for _, o in ipairs(overlays(c, n)) do t = t - o.tokens + o.c.stokens end
  end
  return t + prompt_tokens(c)
end

-- synthetic is the message that stands for overlay o on a path.
local function synthetic(o)
  local cp = o.c
  return '{"id":"compaction:' .. cp.id .. '","role":"system","content":' .. json.field_raw(cp.json, 'summary') ..
    ',"compaction":{"id":"' .. cp.id .. '","from_id":"' .. cp.from .. '","to_id":"' .. cp.to .. '"},"tokens":' ..
    fmt_int(cp.stokens) .. '}'
end

-- drop_compactions deletes the compactions with an endpoint in gone (a set
-- of message ids).
local function drop_compactions(c, gone)
  if redis.call('EXISTS', c.mcomp) == 0 then return end
  for _, cp in ipairs(compactions(c)) do
    if gone[cp.from] or gone[cp.to] then redis.call('HDEL', c.mcomp, cp.id, '#' .. cp.id) end
  end
end

-- suggest_crossed emits compaction_suggested when the latest path's tokens
-- went from before to after across threshold (0 = never) upward.
local function suggest_crossed(c, threshold, before, after)
  if threshold > 0 and before <= threshold and after > threshold then
    events.emit(c, 'compaction_suggested', 'message', nil,
      '{"total_tokens":' .. fmt_int(after) .. ',"threshold":' .. fmt_int(threshold) .. '}')
  end
end

-- Appends -----------------------------------------------------------------------

-- id_conflict refuses an append of message id, held with other fields.
local function id_conflict(id)
  return reply.refused('id_conflict', 'message ' .. id .. ' is already stored with other fields; nothing was written')
end

-- append is an append of one message or a chained batch, all checks first.
-- batch: {id=, fp=, tokens=, body=, and for the search index spec=, len=}
-- in order; mode 'latest' (parent: the latest leaf), 'root' or
-- 'id' (parent pid); if_match nil or the leaf the caller expects; max the
-- most messages a session holds; key the Idempotency-Key or ''; suggest
-- SESSION_COMPACT_AFTER_TOKENS (nil or 0 = never); max_bytes the byte cap
-- of a keyed repeat's answer (dup_answer). Returns the script's
-- answer (messages_append.lua): {'ok', 'stored'|'started', message...
-- [, 'index_pending']},
-- {'dup', message...}, {'ok', 'leaf_moved'|'unknown_parent', detail} or a
-- refusal.
local function append(c, batch, mode, pid, if_match, max, key, suggest, max_bytes)
  for _, m in ipairs(batch) do m.spec = search.wanted(c, m.spec) end
  local refused = check_keys(c)
  if refused then return refused end
  local bad = session.check_finish(c, nil, false, false)
  if bad then return reply.bad_key(bad) end
  local again = keyed(c, key, max_bytes)
  if again then return again end
  local leaf, seq = msgtree.rec_msgs(c)
  if if_match and if_match ~= (leaf or '') then return reply.ok('leaf_moved', leaf or '') end
  -- ids the session holds already: all of them identical is a retry (one
  -- HMGET for the batch; an id not held is cached as none)
  local want = {}
  for i, m in ipairs(batch) do want[i] = m.id end
  for i, v in ipairs(msgtree.hmget_chunks(c.mtree, want)) do
    if not v and c.nodes[want[i]] == nil then c.nodes[want[i]] = false end
  end
  local held = 0
  for i, m in ipairs(batch) do
    local n = node(c, m.id)
    if n then
      held = held + 1
      local want_parent
      if i > 1 then want_parent = batch[i - 1].id
      elseif mode == 'root' then want_parent = ''
      elseif mode == 'id' then want_parent = pid end
      if n.fp ~= m.fp or (want_parent and n.parent ~= want_parent) then return id_conflict(m.id) end
    end
  end
  if held > 0 then
    if held < #batch then
      for _, m in ipairs(batch) do
        if not node(c, m.id) then return id_conflict(m.id) end
      end
    end
    local out = reply.dup()
    for _, m in ipairs(batch) do out[#out + 1] = redis.call('HGET', c.msgs, m.id) end
    return out
  end
  local parent
  if mode == 'latest' then
    parent = node(c, leaf)
  elseif mode == 'id' then
    parent = node(c, pid)
    if not parent then return reply.ok('unknown_parent', pid) end
  end
  local count = redis.call('ZCARD', c.morder)
  if count + #batch > max then
    return reply.refused('session_full', 'session ' .. c.uid .. '/' .. c.sid .. ' holds ' .. fmt_int(count) ..
      ' messages and may hold at most ' .. fmt_int(max) .. ' (SESSION_MAX_MESSAGES); nothing was written')
  end
  suggest = suggest or 0
  local before = 0
  if suggest > 0 then before = path_tokens(c, node(c, leaf)) end

  -- the writes
  local now = clock.now_us()
  local created_at = '"' .. clock.iso_time(now) .. '"'
  local out, ids, nodes, texts = reply.ok('stored'), {}, {}, {}
  for _, m in ipairs(batch) do
    seq = seq + 1
    local n = msgtree.new_node(c, m.id, parent, m.tokens, seq, m.fp)
    c.nodes[m.id] = n
    local text = stored_json(m.body, n.parent, created_at)
    if m.spec then search.index_doc(c, c.sdocs, m.id, m.spec, m.len, now) end
    out[#out + 1] = text
    ids[#ids + 1] = m.id
    nodes[#nodes + 1], texts[#texts + 1] = n, text
    parent = n
  end
  -- the four writes of every message, a command per key (not per message)
  msgtree.copy_path(c, nodes, texts)
  redis.call('HSET', c.record, 'msg_seq', fmt_int(seq))
  msgtree.set_leaf(c, parent.id)
  local new_ring = remember(c, key, ids)
  -- one message_appended each; a user message clears a pending abort
  local user = false
  for i = 3, #out do
    events.emit(c, 'message_appended', 'message', ids[i - 2], out[i])
    user = user or is_user(out[i])
  end
  if user and session.clear_abort(c) then events.emit(c, 'abort_cleared', 'state', nil, '{}') end
  if suggest > 0 then suggest_crossed(c, suggest, before, path_tokens(c, parent)) end
  local _, started = session.finish_write(c, false, count == 0 or new_ring)
  if started then out[2] = 'started' end
  -- stored without their documents for a user who has an index (the
  -- sidecar sent none: search.wanted), or the session's index dropped as
  -- foreign (search.current): the catch-up indexes them
  if c.search_pending or c.search_dropped then out[#out + 1] = 'index_pending' end
  return out
end

return {
  at = at,
  stored_json = stored_json,
  write_checks = write_checks,
  has_children = has_children,
  emit_deleted = emit_deleted,
  new_session_checks = new_session_checks,
  compactions = compactions,
  on_path = on_path,
  overlays = overlays,
  prompt_tokens = prompt_tokens,
  path_tokens = path_tokens,
  synthetic = synthetic,
  drop_compactions = drop_compactions,
  suggest_crossed = suggest_crossed,
  id_conflict = id_conflict,
  dup_answer = dup_answer,
  append = append,
}
