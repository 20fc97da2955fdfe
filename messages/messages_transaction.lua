-- messages_transaction: one history transaction on the latest path (the
-- OpenAI Agents SDK's append_items, replace_suffix, replace_function_call
-- and replace-with-compaction), all or nothing, idempotent by its
-- operation id: the id is stored with the change (in the session's ring of
-- the 1 000 newest keys, in the tree's hash: msgtree, as 'tx <id>' ->
-- "digest ids..."), so a
-- repeat with the same transaction (digest) answers the messages the first
-- one wrote and writes nothing, and the same id with another transaction is
-- refused. Readers see the history before or after, never between.
-- The removed segment is the latest path's last k messages (named, with
-- their fingerprints, by the caller that compared them); the new messages
-- are chained in its place. Bounded by the caller: at most 1 000 removed
-- and 1 000 written (MaxBatch), the written bodies within the route's body
-- limit; 'whole' removes every message with O(1) UNLINKs as clear does.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the operation id
-- ARGV[3] the transaction's digest (hex; a repeat must hold the same)
-- ARGV[4] 'suffix' (the segment ARGV[10..] is replaced; k = 0 appends)
--   or 'whole' (every message and compaction goes, as messages_clear,
--   but the ring of keys stays)
-- ARGV[5] '1' when the caller found that the stored suffix differs from
--   the expected one: refused as suffix_mismatch unless a repeat
-- ARGV[6] SESSION_MAX_MESSAGES, ARGV[7] SESSION_COMPACT_AFTER_TOKENS
-- ARGV[8] the answer's byte cap for a repeat (the first time's messages
--   are answered while within it, then 'truncated')
-- ARGV[9] k, then k pairs (id, fingerprint): the segment, oldest first;
--   for 'whole', k = 1 names the latest leaf the caller read ('' = none;
--   any other leaf: suffix_mismatch) and k = 0 checks nothing
-- then per new message, seven values: 'new' or 'keep' (a message of the
--   segment kept as stored, e.g. after a replaced function call), id, and
--   for 'new' the fingerprint, tokens, body (messages_append's), search
--   terms (prefixed with '?' under SEARCH_INDEX=on-demand: search.wanted),
--   length ('' for 'keep')
-- emits message_deleted (the segment's ids, or cleared) and one
-- message_appended for the messages written (messages.emit_appended); compaction_suggested as an
-- append does.
-- returns (reply.lua) {'ok', 'stored'|'started', message...} the messages
--   written (then 'index_pending' when the write dropped the session's
--   index as foreign: search.current); {'dup', message...} a repeat: those of the first time still
--   held (within ARGV[11] bytes, then 'truncated' when cut); with nothing written, {'ok', 'suffix_mismatch', id} (the stored
--   suffix differs, id the first message that differs or ''),
--   {'refused', code, text} for 'operation_conflict', 'has_children' (a
--   message of the segment has another branch), 'id_conflict',
--   'session_full' and 'key_wrong_type'.
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
local op, digest, whole, differs = 'tx ' .. ARGV[2], ARGV[3], ARGV[4] == 'whole', ARGV[5] == '1'
local max, suggest, max_bytes, k = tonumber(ARGV[6]), tonumber(ARGV[7]) or 0, tonumber(ARGV[8]), tonumber(ARGV[9])
local expected, entries = {}, {}
for i = 1, k do expected[i] = { id = ARGV[8 + 2 * i], fp = ARGV[9 + 2 * i] } end
for i = 10 + 2 * k, #ARGV, 7 do
  entries[#entries + 1] = { keep = ARGV[i] == 'keep', id = ARGV[i + 1], fp = ARGV[i + 2], tokens = tonumber(ARGV[i + 3]),
    body = ARGV[i + 4], spec = ARGV[i + 5], len = tonumber(ARGV[i + 6]) }
end

local refused = msgtree.begin(c)
if refused then return refused end
-- under SEARCH_INDEX=on-demand a spec is written only while the user has
-- an index (search.wanted), as an append's
local indexing = false
for _, e in ipairs(entries) do
  e.spec = search.wanted(c, e.spec)
  indexing = indexing or (e.spec ~= nil and e.spec ~= '')
end
-- the ring's entry of the operation and the slot the next key takes, and
-- the latest leaf's node and jumps, in one read of the tree
local kf, sf = msgtree.ring_fields(c, op)
local ids = { c.leaf or '' }
for _, j in ipairs(c.leaf_j) do ids[#ids + 1] = j end
local v = redis.pcall('HMGET', c.mtree, kf, sf, unpack(ids))
if v.err then return guard.from_error(c.mtree, 'hash', v) end
local evicted = v[2] or nil
msgtree.cache(c, ids, { unpack(v, 3) })
local held = msgtree.ring_held(v[1] or nil)
if held then
  local d, hids = string.match(held, '^(%S*) ?(.*)$')
  if d ~= digest then
    return reply.refused('operation_conflict', 'operation ' .. ARGV[2] ..
      ' was already applied with another transaction; nothing was written')
  end
  return session.reply(c, messages.dup_answer(c, hids, max_bytes))
end
if differs then return session.reply(c, reply.ok('suffix_mismatch', '')) end

-- the segment: the latest path's last k messages, as the caller read them
local leaf_id, seq = msgtree.rec_msgs(c)
local parent = node(c, leaf_id)
local gone, gone_set = {}, {}
if whole and k == 1 and (leaf_id or '') ~= expected[1].id then
  return session.reply(c, reply.ok('suffix_mismatch', leaf_id or ''))
end
if not whole then
  local n = parent
  for i = k, 1, -1 do
    if not n or n.id ~= expected[i].id or n.fp ~= expected[i].fp then
      return session.reply(c, reply.ok('suffix_mismatch', n and n.id or ''))
    end
    gone[#gone + 1], gone_set[n.id] = n, true
    n = node(c, n.parent)
  end
  parent = n
  -- only the path's own messages go: a branch under one of them refuses
  for i, g in ipairs(gone) do
    local kids = msgtree.children(c, g.id, 2)
    if #kids > 1 or (#kids == 1 and (i == 1 or kids[1] ~= gone[i - 1].id)) then
      return reply.refused('has_children', 'message ' .. g.id ..
        ' of the replaced suffix has another branch under it; nothing was written')
    end
  end
end
local count = c.count
-- one message per id: a replacement named like a message it keeps would
-- store the id twice (the second its own parent)
local seen = {}
for _, e in ipairs(entries) do
  if seen[e.id] then return messages.id_conflict(e.id) end
  seen[e.id] = true
  local n = node(c, e.id)
  if e.keep then
    if not n or not gone_set[e.id] then error('kept message ' .. e.id .. ' is not in the replaced segment') end
    e.text, e.tokens, e.fp = redis.call('HGET', c.msgs, e.id), n.tokens, n.fp
  elseif n and not whole and not gone_set[e.id] then
    return messages.id_conflict(e.id)
  end
end
local after = #entries
if not whole then after = count - #gone + #entries end
if after > max then
  return reply.refused('session_full', 'session ' .. c.uid .. '/' .. c.sid .. ' would hold ' .. fmt_int(after) ..
    ' messages and may hold at most ' .. fmt_int(max) .. ' (SESSION_MAX_MESSAGES); nothing was written')
end
local before = 0
if suggest > 0 then before = messages.path_tokens(c, node(c, leaf_id)) end
if indexing then
  refused = search.prepare(c, 'messages')
  if refused then return refused end
end
msgtree.use(c, true)
refused = messages.change(c)
if refused then return refused end

-- reparent is stored message text with parent_id pid (its created_at kept):
-- messages.stored_json ends every message with parent_id and created_at,
-- so the pair is found anchored at the end (a metadata or item member
-- named parent_id before them is the message's own).
local function reparent(text, pid)
  local at, _, created = string.find(text, ',"parent_id":[^,]*,"created_at":("[^"]*")}%s*$', math.max(1, #text - 300))
  return messages.stored_json(string.sub(text, 1, at - 1) .. '}', pid, created)
end

-- the writes
local op_json = ',"operation_id":' .. cjson.encode(ARGV[2])
local tree, del = {}, {}
if whole then
  if count > 0 or session.has(c, msgtree.MCOMP) then
    -- O(1) commands, Redis frees them; the ring (in the tree's hash) is
    -- written again with the new nodes
    tree = msgtree.ring_kept(c)
    redis.call('UNLINK', c.msgs, c.mtree, c.mkids, c.morder, c.mcomp)
    session.drop(c, msgtree.MCOMP)
    if c.sdocs then search.unindex_all(c, c.sdocs) end
    for _, p in ipairs({ msgtree.MSGS, msgtree.MTREE, msgtree.MKIDS, msgtree.MORDER }) do
      session.drop(c, p)
      session.use(c, p, 'hash', true)
    end
    c.nodes = {}
    events.emit(c, 'message_deleted', 'message', nil, '{"cleared":true,"count":' .. fmt_int(count) .. op_json .. '}')
  end
  parent, count = nil, 0
elseif #gone > 0 then
  local kept, gids, docs = {}, {}, {}
  for _, e in ipairs(entries) do if e.keep then kept[e.id] = true end end
  messages.drop_compactions(c, gone_set)
  for i, g in ipairs(gone) do
    msgtree.remove_node(c, g)
    if not kept[g.id] then docs[#docs + 1] = g.id end
    gids[#gone + 1 - i] = g.id
  end
  -- their postings now, as a delete's; a segment holding too many to take
  -- out in one script drops the session's messages from the index, for the
  -- catch-up the sidecar queues to take the rest in again
  if c.sdocs then search.retire(c, c.sdocs, docs) end
  messages.emit_deleted(c, gids[1], gids, op_json)
  count = count - #gone
  if count == 0 then
    -- every message went: Redis removed the emptied keys, which the new
    -- messages make anew
    for _, p in ipairs({ msgtree.MSGS, msgtree.MKIDS, msgtree.MORDER }) do session.made(c, p) end
    if c.rkeys == 0 then session.made(c, msgtree.MTREE) end
  end
end
if indexing and not session.has(c, search.DOCS) then c.sdocs = session.use(c, search.DOCS, 'hash', true) end
local now = session.now(c)
local created_at = '"' .. clock.iso_time(now) .. '"'
local out, new_ids, user, nodes, texts = reply.ok('stored'), {}, false, {}, {}
for _, e in ipairs(entries) do
  seq = seq + 1
  local n = msgtree.new_node(c, e.id, parent, e.tokens, seq, e.fp)
  c.nodes[e.id] = n
  local text
  if e.keep then text = reparent(e.text, n.parent) else text = messages.stored_json(e.body, n.parent, created_at) end
  if not e.keep and e.spec and e.spec ~= '' then
    search.index_doc(c, c.sdocs, e.id, e.spec, e.len, now)
  end
  out[#out + 1], new_ids[#new_ids + 1], nodes[#nodes + 1], texts[#texts + 1] = text, e.id, n, text
  parent = n
end
count = count + #entries
-- the four writes of every message, a command per key (not per message),
-- the ring's entry of the operation with the tree's
local fields = msgtree.leaf_fields(c, parent and parent.id or nil, count)
fields[#fields + 1], fields[#fields + 2] = 'msg_seq', fmt_int(seq)
local ring = msgtree.ring_put(c, op, digest .. ' ' .. table.concat(new_ids, ' '), evicted, nil, tree, del)
fields[#fields + 1], fields[#fields + 2] = ring[1], ring[2]
msgtree.copy_path(c, nodes, texts, tree)
if #del > 0 then redis.call('HDEL', c.mtree, unpack(del)) end
msgtree.emptied(c, count)
for i = 3, #out do
  user = user or (not entries[i - 2].keep and messages.is_user(out[i]))
end
if #nodes > 0 then messages.emit_appended(c, new_ids, texts, nodes[1].parent) end
if user and session.clear_abort(c) then events.emit(c, 'abort_cleared', 'state', nil, '{}') end
if suggest > 0 then messages.suggest_crossed(c, suggest, before, messages.path_tokens(c, parent)) end
if session.finish(c, fields) then out[2] = 'started' end
-- the session's index dropped as foreign (search.current): the catch-up
-- takes its other messages in again
if c.search_dropped then out[#out + 1] = 'index_pending' end
return session.reply(c, out)
