-- messages_stage_commit: the last step of a staged append
-- (messages_stage_open): its messages made the session's latest path in
-- one O(1) step (a whole new history: its staged keys renamed over the
-- session's), one event.
--
-- The stage: messages_stage_open.lua and msgstage.lua.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the stage's token
-- ARGV[3] the parts put; ARGV[4] SESSION_COMPACT_AFTER_TOKENS (0 =
-- never); ARGV[5] the operation's digest ('' for an append); ARGV[6]
-- SEARCH_INDEX ('off', 'eager' or 'on-demand').
-- returns {'ok', 'stored'|'started', n} (n the messages it made
-- visible) then 'index_pending' when the user has an index (the staged messages have no documents: the catch-up
-- writes them), {'ok', 'stage_lost'}, or a refusal: 'part_missing'; an
-- error for a whole stage with no message staged (nothing written).
-- Emits one message_appended (a range: messages.emit_appended) and,
-- for a user message, abort_cleared; compaction_suggested as an append.
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
local token = ARGV[2]
local refused = msgtree.begin(c, nil, true)
if refused then return refused end
local st = c.stage

if not st or st.token ~= token then return reply.ok('stage_lost') end
local parts, suggest, digest, mode = tonumber(ARGV[3]), tonumber(ARGV[4]) or 0, ARGV[5], ARGV[6]
if parts ~= st.parts then return msgstage.part_missing(st.parts, parts) end
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
  local sk = msgstage.staged_keys(c)
  if #ring > 0 then redis.call('HSET', sk[2], unpack(ring)) end
  local live = { c.msgs, c.mtree, c.mkids, c.morder }
  redis.call('UNLINK', c.mcomp, unpack(live))
  if session.has(c, msgtree.MCOMP) then session.drop(c, msgtree.MCOMP) end
  if session.has(c, search.DOCS) then search.unindex_all(c, session.key(c, search.DOCS)) end
  for i = 1, 4 do
    redis.call('RENAME', sk[i], live[i])
    session.drop(c, msgstage.STAGED[i])
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
