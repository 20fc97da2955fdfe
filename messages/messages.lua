-- messages: the writes of a session's messages (the messages module) and
-- its compactions, over the tree of msgtree.lua. c is a session context
-- made ready by msgtree.open (messages.at for another session of the user:
-- fork and split write a new one).
--- @include reply
--- @include json
--- @include clock
--- @include guard
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include compactions

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

-- range_json is the data of message_appended for count messages first..last
-- under parent_id, with their ids (a list of at most 100, or nil).
local function range_json(count, first, last, parent_id, ids)
  local p = 'null'
  if parent_id ~= '' then p = '"' .. parent_id .. '"' end
  local j = '{"count":' .. string.format('%d', count) .. ',"first_id":"' .. first .. '","last_id":"' .. last ..
    '","parent_id":' .. p
  if ids and #ids <= 100 then j = j .. ',"ids":["' .. table.concat(ids, '","') .. '"]' end
  return j .. '}'
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
-- ids may be a range of sequence numbers instead, "@<from>-<to>" (a staged
-- append: messages_stage_open.lua), read from the order key 64 at a time.
local function dup_answer(c, ids, max_bytes)
  local out, size = reply.dup(), 0
  local from, to = string.match(ids, '^@(%d+)%-(%d+)$')
  local more = false
  if from then
    -- at most MaxBatch (1 000) of them, as a repeat of one append: an
    -- operation sent in parts may hold more (then 'truncated')
    local list = redis.call('ZRANGEBYSCORE', c.morder, from, to, 'LIMIT', 0, 1001)
    more = #list > 1000
    if more then list[1001] = nil end
    ids = table.concat(list, ' ')
  end
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
  if more and #out > 1 then out[#out + 1] = 'truncated' end
  return out
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
-- with key (an Idempotency-Key, or ''). Returns sid's context (messages.at,
-- begun: msgtree.begin) and nil when it can; 'again' when it was created
-- by that key (a retry); else the refusal (reply.lua: session_exists,
-- key_wrong_type, the user's fence).
local function new_session_checks(c, sid, key)
  local to = at(c, sid)
  -- a stage of sid is no write to wait for: a session with one exists
  -- (its record holds it); a 'staging' refusal here would send the
  -- sidecar waiting on (and dropping the stages of) c's session instead
  local refused = msgtree.begin(to, { 'create_key' }, true)
  if refused then return to, refused end
  if session.exists(to) then
    if key ~= '' and to.rec.create_key == key then return to, 'again' end
    return to, reply.refused('session_exists', 'session ' .. c.uid .. '/' .. sid .. ' already exists; nothing was written')
  end
  return to, nil
end

-- emit_appended emits the one message_appended of an append of messages
-- ids (the texts as stored) under parent_id ('' for a root): a single
-- message's event carries it, as stored; several messages' a range,
-- {"count", "first_id", "last_id", "parent_id"} (the path to last_id ends
-- with them), and "ids" while the batch holds at most 100 (see
-- docs/events.md).
local function emit_appended(c, ids, texts, parent_id)
  if #ids == 1 then return events.emit(c, 'message_appended', 'message', ids[1], texts[1]) end
  return events.emit(c, 'message_appended', 'message', ids[#ids], range_json(#ids, ids[1], ids[#ids], parent_id, ids))
end

-- Appends -----------------------------------------------------------------------

-- id_conflict refuses an append of message id, held with other fields.
local function id_conflict(id)
  return reply.refused('id_conflict', 'message ' .. id .. ' is already stored with other fields; nothing was written')
end

-- change makes the checks and first writes (session.commit) of a write
-- that changes a session's messages (the caller has checked what is
-- asked): the messages keys and, when the session has them, its search
-- documents (c.sdocs: their type read now, so a hash of another type
-- refuses the write) and compactions; then events.use and commit. Returns
-- the refusal, or nil.
local function change(c)
  msgtree.use(c, false, session.has(c, msgtree.MCOMP))
  if session.has(c, search.DOCS) then
    c.sdocs = session.key(c, search.DOCS)
    local refused = search.read_docs(c, c.sdocs)
    if refused then return refused end
  end
  events.use(c)
  return session.commit(c)
end

-- read_tree reads, in one HMGET of c.mtree (a pcall: a tree of another
-- type refuses the write), the nodes an append needs: the batch's ids, its
-- parent (the latest leaf with its jump and jump's jump, which its child's
-- jump needs, or pid), and the ring's entry of key with the slot the next
-- key takes. Returns the ring's entry and the key the slot holds (nil
-- without a key), or the refusal.
local function read_tree(c, batch, mode, pid, key)
  local ids = {}
  for i, m in ipairs(batch) do ids[i] = m.id end
  if mode == 'latest' and c.leaf then
    ids[#ids + 1] = c.leaf
    for _, j in ipairs(c.leaf_j) do ids[#ids + 1] = j end
  elseif mode == 'id' then
    ids[#ids + 1] = pid
  end
  local fields = { unpack(ids) }
  if key ~= '' then
    local kf, sf = msgtree.ring_fields(c, key)
    fields[#fields + 1], fields[#fields + 2] = kf, sf
  end
  local v = redis.pcall('HMGET', c.mtree, unpack(fields))
  if v.err then return nil, nil, guard.from_error(c.mtree, 'hash', v) end
  msgtree.cache(c, ids, v)
  if key == '' then return nil, nil end
  return v[#fields - 1] or nil, v[#fields] or nil
end

-- held_answer is the answer when the session holds ids of batch already:
-- all of them with the same fields and parents is a retry ({'dup',
-- message...}), any other a refusal (id_conflict); nil when none is held.
local function held_answer(c, batch, mode, pid)
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
  if held == 0 then return nil end
  if held < #batch then
    for _, m in ipairs(batch) do
      if not node(c, m.id) then return id_conflict(m.id) end
    end
  end
  local out = reply.dup()
  for _, m in ipairs(batch) do out[#out + 1] = redis.call('HGET', c.msgs, m.id) end
  return out
end

-- check_new makes the checks of the first message m of new session c
-- (messages.new_session_checks) that append would make, before another
-- session's first write (a split): nil, or the refusal.
local function check_new(c, m)
  local _, _, refused = read_tree(c, { m }, 'root', '', '')
  if refused then return refused end
  msgtree.use(c, true)
  -- the document append will write (search.wanted, as append reads it)
  local spec = search.wanted(c, m.spec)
  if spec and spec ~= '' then
    refused = search.prepare(c, 'messages')
    if refused then return refused end
  end
  events.use(c)
  return session.check(c)
end

-- append_checks makes append's reads and checks, before its first write:
-- returns append's answer when it ends there (a refusal, a keyed repeat,
-- leaf_moved, unknown_parent), else nil and what the writes need.
local function append_checks(c, batch, mode, pid, if_match, max, key, suggest, max_bytes)
  local indexing = false
  for _, m in ipairs(batch) do
    m.spec = search.wanted(c, m.spec)
    -- no searchable word (or SEARCH_INDEX=off): a new message has no
    -- document to write, so the write touches no key of the index
    if m.spec == '' then m.spec = nil end
    indexing = indexing or m.spec ~= nil
  end
  local ring_v, evicted, refused = read_tree(c, batch, mode, pid, key)
  if refused then return refused end
  local old_slot
  if ring_v then
    local ids, slot = msgtree.ring_held(ring_v)
    local again = dup_answer(c, ids or '', max_bytes)
    if #again > 1 then return again end
    -- every message of that append is gone since: the key is stale, and
    -- the append is made again (the key takes a new slot)
    old_slot = slot
  end
  local leaf, seq = msgtree.rec_msgs(c)
  if if_match and if_match ~= (leaf or '') then return reply.ok('leaf_moved', leaf or '') end
  local held = held_answer(c, batch, mode, pid)
  if held then return held end
  local parent
  if mode == 'latest' then
    parent = node(c, leaf)
  elseif mode == 'id' then
    parent = node(c, pid)
    if not parent then return reply.ok('unknown_parent', pid) end
  end
  local count = c.count
  if count + #batch > max then
    return reply.refused('session_full', 'session ' .. c.uid .. '/' .. c.sid .. ' holds ' .. fmt_int(count) ..
      ' messages and may hold at most ' .. fmt_int(max) .. ' (SESSION_MAX_MESSAGES); nothing was written')
  end
  suggest = suggest or 0
  local before = 0
  if suggest > 0 then before = compactions.path_tokens(c, node(c, leaf)) end
  msgtree.use(c, true)
  if indexing then
    refused = search.prepare(c, 'messages')
    if refused then return refused end
  end
  events.use(c)
  return nil, { evicted = evicted, old_slot = old_slot, seq = seq, parent = parent, count = count,
    suggest = suggest, before = before }
end

-- append is an append of one message or a chained batch, all checks first,
-- to a session msgtree.begin has begun. batch: {id=, fp=, tokens=, body=,
-- and for the search index spec=, len=} in order; mode 'latest' (parent:
-- the latest leaf), 'root' or 'id' (parent pid); if_match nil or the leaf
-- the caller expects; max the most messages a session holds; key the
-- Idempotency-Key or ''; suggest SESSION_COMPACT_AFTER_TOKENS (nil or 0 =
-- never); max_bytes the byte cap of a keyed repeat's answer (dup_answer).
-- c.on_commit, when set, runs right after the commit (a split's event of
-- the start), and c.extra holds more record fields for finish.
-- Returns the script's answer (messages_append.lua): {'ok',
-- 'stored'|'started', message... [, 'index_pending']}, {'dup',
-- message...}, {'ok', 'leaf_moved'|'unknown_parent', detail} or a refusal.
-- An existing session's single message, within the grain, costs three
-- reads (the marker, the record, the tree), TIME and five writes (the
-- tree, the message, its child and order entries, the record).
local function append(c, batch, mode, pid, if_match, max, key, suggest, max_bytes)
  local answer, st = append_checks(c, batch, mode, pid, if_match, max, key, suggest, max_bytes)
  if answer then return answer end
  local seq, parent, count, evicted, old_slot = st.seq, st.parent, st.count, st.evicted, st.old_slot
  suggest = st.suggest
  local refused = session.commit(c)
  if refused then return refused end
  if c.on_commit then c.on_commit() end

  -- the writes
  local now = session.now(c)
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
  -- the four writes of every message, a command per key (not per message),
  -- the ring's entry with the tree's
  local tree, del = {}, {}
  local fields = msgtree.leaf_fields(c, parent.id, count + #batch)
  fields[#fields + 1], fields[#fields + 2] = 'msg_seq', fmt_int(seq)
  if key ~= '' then
    local ring = msgtree.ring_put(c, key, table.concat(ids, ' '), evicted, old_slot, tree, del)
    fields[#fields + 1], fields[#fields + 2] = ring[1], ring[2]
  end
  msgtree.copy_path(c, nodes, texts, tree)
  if #del > 0 then redis.call('HDEL', c.mtree, unpack(del)) end
  -- one message_appended; a user message clears a pending abort
  local user = false
  for i = 3, #out do user = user or is_user(out[i]) end
  emit_appended(c, ids, texts, nodes[1].parent)
  if user and session.clear_abort(c) then events.emit(c, 'abort_cleared', 'state', nil, '{}') end
  if suggest > 0 then compactions.suggest_crossed(c, suggest, st.before, compactions.path_tokens(c, parent)) end
  for _, v in ipairs(c.extra or {}) do fields[#fields + 1] = v end
  if session.finish(c, fields) then out[2] = 'started' end
  -- stored without their documents for a user who has an index (the
  -- sidecar sent none: search.wanted), or the session's index dropped as
  -- foreign (search.current): the catch-up indexes them
  if c.search_pending or c.search_dropped then out[#out + 1] = 'index_pending' end
  return out
end

return {
  change = change,
  check_new = check_new,
  at = at,
  stored_json = stored_json,
  has_children = has_children,
  emit_deleted = emit_deleted,
  new_session_checks = new_session_checks,
  compactions = compactions.compactions,
  on_path = compactions.on_path,
  overlays = compactions.overlays,
  prompt_tokens = compactions.prompt_tokens,
  path_tokens = compactions.path_tokens,
  synthetic = compactions.synthetic,
  drop_compactions = compactions.drop_compactions,
  suggest_crossed = compactions.suggest_crossed,
  id_conflict = id_conflict,
  dup_answer = dup_answer,
  append = append,
  emit_appended = emit_appended,
  range_json = range_json,
  is_user = is_user,
}
