-- messages_stage_put: one put of a staged append (messages_stage_open): a
-- chunk of its messages written where no reader looks, at most
-- StageMessages of them and StageBytes of their bodies (one bigger alone).
--
-- The stage: messages_stage_open.lua and msgstage.lua.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the stage's token
-- ARGV[3] the lease (ms); ARGV[4] the part (0, 1, ...: this stage's
-- puts so far); ARGV[5] SESSION_MAX_MESSAGES; ARGV[6..] per message
-- four values: id, fingerprint, tokens and the message as stored
-- (messages.stored_json of messages_append's body under the previous
-- message, with the stage's created_at: the sidecar makes it, so that
-- a big message is copied once; its end is checked here).
-- returns {'ok', 'staged', n} (n staged in all), {'ok', 'repeat', n}
-- for a part put before (nothing written), {'ok', 'stage_lost'} (the stage is not this
-- token's: dropped as abandoned, or the session deleted), or a refusal:
-- 'part_missing', 'id_conflict', 'session_full'.
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
local lease_ms, part, max = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if part < st.parts then return reply.ok('repeat', st.n) end
if part > st.parts then return msgstage.part_missing(st.parts, part) end
local batch = {}
for i = 6, #ARGV, 4 do
  batch[#batch + 1] = { id = ARGV[i], fp = ARGV[i + 1], tokens = tonumber(ARGV[i + 2]), body = ARGV[i + 3] }
end
if (st.whole and 0 or c.count) + st.n + #batch > max then return msgstage.session_full(c, st.n + #batch, max) end
if st.whole then msgstage.to_staged(c) end
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
local at = ',"created_at":' .. msgstage.created_at(st) .. '}'
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
msgstage.lease(c, st, lease_ms)
redis.call('HSET', c.record, 'msg_stage', msgstage.text(st))
msgstage.expire_staged(c)
return reply.ok('staged', st.n)
