--! prelude: messages_lib
-- messages_read: the reads of a session's messages, each one atomic step
-- of bounded work (writes nothing).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] what to read:
--   'path': a page of the path root..leaf. ARGV[6] the leaf ('' = the
--     latest leaf), ARGV[7] 'asc' or 'desc', ARGV[8] limit, ARGV[9] ''
--     (no cursor), 'before' or 'after', ARGV[10] the cursor's message id,
--     ARGV[11] offset, ARGV[12] the answer's byte cap (the page is cut
--     before its messages pass it, next_cursor continuing it). Cost
--     O(limit + log depth): the page's deepest
--     message is found through the jump pointers, then the page is walked
--     up parent by parent.
--   'one': ARGV[6] the message id.
--   'children': ARGV[6] the message id, ARGV[7] the most children.
-- returns for 'path' {total, total_tokens, next_cursor ('' = none), tokens
--   of the latest path, 1 when the byte cap cut the page else 0,
--   message...} in the page's order; for 'one' the
--   message, or nil; for 'children' {0, message...} oldest first; and
--   {-1, code, id} for 'not_found' (no such message: the leaf, or the one
--   asked for) and 'invalid_cursor' (the cursor is not on the path).
local what = ARGV[5]

if what == 'one' then
  return redis.call('HGET', K_MSGS, ARGV[6])
end

if what == 'children' then
  if not node(ARGV[6]) then return { -1, 'not_found', ARGV[6] } end
  local ids = children(ARGV[6], tonumber(ARGV[7]))
  local out = { 0 }
  if #ids > 0 then
    for _, m in ipairs(redis.call('HMGET', K_MSGS, unpack(ids))) do out[#out + 1] = m end
  end
  return out
end

-- 'path'
local latest = rec_msgs()
local leaf_id, order, limit, kind, cursor, offset = ARGV[6], ARGV[7], tonumber(ARGV[8]), ARGV[9], ARGV[10], tonumber(ARGV[11])
local max_bytes = tonumber(ARGV[12])
if leaf_id == '' then leaf_id = latest end
local leaf = node(leaf_id)
if not leaf then
  if ARGV[6] ~= '' then return { -1, 'not_found', ARGV[6] } end
  return { 0, 0, '', 0, 0 }
end
local latest_tokens = leaf.cum
if latest and latest ~= leaf.id then
  local l = node(latest)
  latest_tokens = l and l.cum or 0
end
local D = leaf.depth
local at -- the cursor's depth
if kind ~= '' then
  local c = node(cursor)
  if not c or c.depth > D or ancestor(leaf, c.depth).id ~= c.id then
    return { -1, 'invalid_cursor', cursor }
  end
  at = c.depth
end
local lo, hi
local forward -- the page continues toward the leaf (next_cursor at hi)
if order == 'asc' then
  forward = kind ~= 'before'
else
  forward = kind == 'before'
end
if forward then
  if kind == '' then lo = offset else lo = at + 1 + offset end
  hi = math.min(D, lo + limit - 1)
else
  if kind == '' then hi = D - offset else hi = at - 1 - offset end
  lo = math.max(0, hi - limit + 1)
end
local ids = {}
if lo <= hi and hi >= 0 and lo <= D then
  local v = ancestor(leaf, hi)
  for _ = hi, lo, -1 do
    ids[#ids + 1] = v.id -- deepest first
    if v.parent ~= '' then v = node(v.parent) end
  end
end
-- The page is cut before the answer passes max_bytes, on the side away
-- from where it starts (walk: from lo deeper when forward, else from hi up),
-- keeping at least one message; next_cursor then continues it.
local walk = {}
if forward then
  for i = #ids, 1, -1 do walk[#walk + 1] = ids[i] end
else
  walk = ids
end
local size, kept, cut = 0, {}, 0
for _, id in ipairs(walk) do
  size = size + redis.call('HSTRLEN', K_MSGS, id) + 1
  if size > max_bytes and #kept > 0 then
    cut = 1
    break
  end
  kept[#kept + 1] = id
end
local next_cursor = ''
if #kept > 0 and (cut == 1 or (forward and hi < D) or (not forward and lo > 0)) then
  next_cursor = kept[#kept]
end
local out = { D + 1, leaf.cum, next_cursor, latest_tokens, cut }
if #kept > 0 then
  local msgs = redis.call('HMGET', K_MSGS, unpack(kept))
  -- kept is in walk order: shallow first when forward
  local asc = (order == 'asc')
  if asc == forward then
    for i = 1, #msgs do out[#out + 1] = msgs[i] end
  else
    for i = #msgs, 1, -1 do out[#out + 1] = msgs[i] end
  end
end
return out
