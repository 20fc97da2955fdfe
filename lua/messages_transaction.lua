-- messages_transaction: one history transaction on the latest path (the
-- OpenAI Agents SDK's append_items, replace_suffix, replace_function_call
-- and replace-with-compaction), all or nothing, idempotent by its
-- operation id: the id is stored with the change (in the session's ring of
-- the 1 000 newest keys, c.mkeys, as 'tx <id>' -> "digest ids..."), so a
-- repeat with the same transaction (digest) answers the messages the first
-- one wrote and writes nothing, and the same id with another transaction is
-- refused. Readers see the history before or after, never between.
-- The removed segment is the latest path's last k messages (named, with
-- their fingerprints, by the caller that compared them); the new messages
-- are chained in its place. Bounded by the caller: at most 1 000 removed
-- and 1 000 written (MaxBatch), the written bodies within the route's body
-- limit; 'whole' removes every message with O(1) UNLINKs as clear does.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the operation id
-- ARGV[6] the transaction's digest (hex; a repeat must hold the same)
-- ARGV[7] 'suffix' (the segment ARGV[13..] is replaced; k = 0 appends)
--   or 'whole' (every message and compaction goes, as messages_clear)
-- ARGV[8] '1' when the caller found that the stored suffix differs from
--   the expected one: refused as suffix_mismatch unless a repeat
-- ARGV[9] SESSION_MAX_MESSAGES, ARGV[10] SESSION_COMPACT_AFTER_TOKENS
-- ARGV[11] the answer's byte cap for a repeat (the first time's messages
--   are answered while within it, then 'truncated')
-- ARGV[12] k, then k pairs (id, fingerprint): the segment, oldest first;
--   for 'whole', k = 1 names the latest leaf the caller read ('' = none;
--   any other leaf: suffix_mismatch) and k = 0 checks nothing
-- then per new message, seven values: 'new' or 'keep' (a message of the
--   segment kept as stored, e.g. after a replaced function call), id, and
--   for 'new' the fingerprint, tokens, body (messages_append's), search
--   terms (prefixed with '?' under SEARCH_INDEX=on-demand: search.wanted),
--   length ('' for 'keep')
-- emits message_deleted (the segment's ids, or cleared) and
-- message_appended for each message written; compaction_suggested as an
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
--- @include ring
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local MAX_KEYS = 1000
local fmt_int, node = msgtree.fmt_int, msgtree.node
local c = msgtree.open(session.open(KEYS, ARGV))
local op, digest, whole, differs = 'tx ' .. ARGV[5], ARGV[6], ARGV[7] == 'whole', ARGV[8] == '1'
local max, suggest, max_bytes, k = tonumber(ARGV[9]), tonumber(ARGV[10]) or 0, tonumber(ARGV[11]), tonumber(ARGV[12])
local expected, entries = {}, {}
for i = 1, k do expected[i] = { id = ARGV[11 + 2 * i], fp = ARGV[12 + 2 * i] } end
for i = 13 + 2 * k, #ARGV, 7 do
  entries[#entries + 1] = { keep = ARGV[i] == 'keep', id = ARGV[i + 1], fp = ARGV[i + 2], tokens = tonumber(ARGV[i + 3]),
    body = ARGV[i + 4], spec = ARGV[i + 5], len = tonumber(ARGV[i + 6]) }
end

-- under SEARCH_INDEX=on-demand a spec is written only while the user has
-- an index (search.wanted), as an append's
for _, e in ipairs(entries) do e.spec = search.wanted(c, e.spec) end
local refused = messages.write_checks(c)
if refused then return refused end
local held = ring.get(c.mkeys, op, true)
if held then
  local d, ids = string.match(held, '^(%S*) ?(.*)$')
  if d ~= digest then
    return reply.refused('operation_conflict', 'operation ' .. ARGV[5] ..
      ' was already applied with another transaction; nothing was written')
  end
  return messages.dup_answer(c, ids, max_bytes)
end
if differs then return reply.ok('suffix_mismatch', '') end

-- the segment: the latest path's last k messages, as the caller read them
local leaf_id, seq = msgtree.rec_msgs(c)
local parent = node(c, leaf_id)
local gone, gone_set = {}, {}
if whole and k == 1 and (leaf_id or '') ~= expected[1].id then return reply.ok('suffix_mismatch', leaf_id or '') end
if not whole then
  local n = parent
  for i = k, 1, -1 do
    if not n or n.id ~= expected[i].id or n.fp ~= expected[i].fp then
      return reply.ok('suffix_mismatch', n and n.id or '')
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
local count = redis.call('ZCARD', c.morder)
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

-- reparent is stored message text with parent_id pid (its created_at kept):
-- messages.stored_json ends every message with parent_id and created_at,
-- so the pair is found anchored at the end (a metadata or item member
-- named parent_id before them is the message's own).
local function reparent(text, pid)
  local at, _, created = string.find(text, ',"parent_id":[^,]*,"created_at":("[^"]*")}%s*$', math.max(1, #text - 300))
  return messages.stored_json(string.sub(text, 1, at - 1) .. '}', pid, created)
end

-- the writes
local op_json = ',"operation_id":' .. cjson.encode(ARGV[5])
if whole then
  if count > 0 or redis.call('EXISTS', c.mcomp) == 1 then
    redis.call('UNLINK', c.msgs, c.mtree, c.mkids, c.morder, c.mcomp)
    search.unindex_all(c, c.sdocs)
    c.nodes = {}
    events.emit(c, 'message_deleted', 'message', nil, '{"cleared":true,"count":' .. fmt_int(count) .. op_json .. '}')
  end
  parent = nil
elseif #gone > 0 then
  local kept, ids, docs = {}, {}, {}
  for _, e in ipairs(entries) do if e.keep then kept[e.id] = true end end
  messages.drop_compactions(c, gone_set)
  for i, g in ipairs(gone) do
    msgtree.remove_node(c, g)
    if not kept[g.id] then docs[#docs + 1] = g.id end
    ids[#gone + 1 - i] = g.id
  end
  -- their postings now, as a delete's; a segment holding too many to take
  -- out in one script drops the session's messages from the index, for the
  -- catch-up the sidecar queues to take the rest in again
  search.retire(c, c.sdocs, docs)
  messages.emit_deleted(c, ids[1], ids, op_json)
end
local now = clock.now_us()
local created_at = '"' .. clock.iso_time(now) .. '"'
local out, ids, user, nodes, texts = reply.ok('stored'), {}, false, {}, {}
for _, e in ipairs(entries) do
  seq = seq + 1
  local n = msgtree.new_node(c, e.id, parent, e.tokens, seq, e.fp)
  c.nodes[e.id] = n
  local text
  if e.keep then text = reparent(e.text, n.parent) else text = messages.stored_json(e.body, n.parent, created_at) end
  if not e.keep and e.spec and e.spec ~= '' then
    search.index_doc(c, c.sdocs, e.id, e.spec, e.len, now)
  end
  out[#out + 1], ids[#ids + 1], nodes[#nodes + 1], texts[#texts + 1] = text, e.id, n, text
  parent = n
end
-- the four writes of every message, a command per key (not per message)
msgtree.copy_path(c, nodes, texts)
redis.call('HSET', c.record, 'msg_seq', fmt_int(seq))
msgtree.set_leaf(c, parent and parent.id or nil)
local new_ring = ring.put(c.mkeys, op, digest .. ' ' .. table.concat(ids, ' '), MAX_KEYS, true)
for i = 3, #out do
  events.emit(c, 'message_appended', 'message', ids[i - 2], out[i])
  user = user or (not entries[i - 2].keep and string.match(out[i], '^{"id":"[^"]*","role":"user"') ~= nil)
end
if user and session.clear_abort(c) then events.emit(c, 'abort_cleared', 'state', nil, '{}') end
if suggest > 0 then messages.suggest_crossed(c, suggest, before, messages.path_tokens(c, parent)) end
-- a transaction that removed every message emptied the messages keys
-- (Redis deletes them) and made them anew: they slide at once
local _, started = session.finish_write(c, false, count == 0 or whole or count == #gone or new_ring)
if started then out[2] = 'started' end
-- the session's index dropped as foreign (search.current): the catch-up
-- takes its other messages in again
if c.search_dropped then out[#out + 1] = 'index_pending' end
return out
