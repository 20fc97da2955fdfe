-- messages_read: the reads of a session's messages, each one atomic step
-- of bounded work (writes nothing).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] what to read:
--   'path': a page of the path root..leaf. ARGV[3] the leaf ('' = the
--     latest leaf), ARGV[4] 'asc' or 'desc', ARGV[5] limit, ARGV[6] ''
--     (no cursor), 'before' or 'after', ARGV[7] the cursor's message id,
--     ARGV[8] offset, ARGV[9] the answer's byte cap (the page is cut
--     before its messages pass it, next_cursor continuing it), ARGV[10]
--     '1' for the raw path ('0': each compaction in force on the path is
--     read as one synthetic system message, "compaction:<id>"). Cost
--     O(limit + (compactions + 1) log depth): the page's deepest
--     message is found through the jump pointers, then the page is walked
--     up parent by parent.
--   'one': ARGV[3] the message id.
--   'children': ARGV[3] the message id, ARGV[4] the most children,
--     ARGV[5] the answer's byte cap (at least one child is answered; the
--     rest stop before they pass it: read a few at a time, so Redis never
--     holds more than about the cap).
--   'compactions': the compactions in force.
-- returns (reply.lua) for 'path' {'ok', 'page', total, total_tokens,
--   next_cursor ('' = none), tokens of the latest path as read with its
--   compactions (even for a raw page) plus the frozen system prompt's, 1
--   when the byte cap cut the page else 0, message...} in the page's
--   order, or {'ok', 'invalid_cursor', id} (the cursor is not on the
--   path); for 'one' {'ok', message}; for 'children' {'ok', cut, message...} (cut 1 when the byte cap
--   left children out)
--   oldest first; for 'compactions' {'ok', compaction...} oldest first;
--   and {'missing'} for no such message (the leaf, or the one asked for).
--   The messages of a staged append in progress (messages_stage_open.lua) are
--   none of these until its commit: the record's msg_stage says which.
--   The tag comes first, so no message id or text is read as one.
--- @include reply
--- @include session
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local node, ancestor = msgtree.node, msgtree.ancestor
local what = ARGV[2]

if what == 'one' then
  local m = redis.call('HGET', c.msgs, ARGV[3])
  if not m then return reply.missing() end
  -- a message of a staged append in progress is not there yet
  msgstage.read_stage(c)
  if c.staged_after and not msgstage.visible(c, node(c, ARGV[3])) then return reply.missing() end
  return reply.ok(m)
end

if what == 'children' then
  msgstage.read_stage(c)
  if not msgstage.visible(c, node(c, ARGV[3])) then return reply.missing() end
  local ids = msgtree.children(c, ARGV[3], tonumber(ARGV[4]), c.staged_after)
  local cap = tonumber(ARGV[5]) or math.huge
  local out, bytes, cut = reply.ok(0), 0, false
  for i = 1, #ids, 16 do
    local got = redis.call('HMGET', c.msgs, unpack(ids, i, math.min(i + 15, #ids)))
    for j = 1, math.min(16, #ids - i + 1) do
      local m = got[j]
      if m then
        if #out > 2 and bytes + #m > cap then
          cut = true
          break
        end
        out[#out + 1], bytes = m, bytes + #m
      else
        out[#out + 1] = m -- a child without its message: nil, as before
      end
    end
    if cut then break end
  end
  if cut then out[2] = 1 end
  return out
end

if what == 'compactions' then
  local out = reply.ok()
  for _, cp in ipairs(messages.compactions(c)) do out[#out + 1] = cp.json end
  return out
end

-- 'path'
local latest = msgtree.read_leaf(c)
local leaf_id, order, limit, kind, cursor, offset = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7], tonumber(ARGV[8])
local max_bytes, raw = tonumber(ARGV[9]), ARGV[10] == '1'
if leaf_id == '' then leaf_id = latest end
local leaf = node(c, leaf_id)
if not msgstage.visible(c, leaf) then
  if ARGV[3] ~= '' then return reply.missing() end
  return reply.ok('page', 0, 0, '', 0, 0)
end
-- The path as read: each compaction in force on it stands for its range
-- (unless raw). Read positions count a compaction as one message.
local ovs = {}
if not raw then ovs = messages.overlays(c, leaf) end
local total, total_tokens = leaf.depth + 1, leaf.cum
for _, o in ipairs(ovs) do
  total = total - (o.td - o.fd)
  total_tokens = total_tokens - o.tokens + o.c.stokens
end
-- the latest path's tokens as read with its compactions (whether this page
-- is raw or not), plus the frozen system prompt's (blocks module), for
-- compaction_suggested
local latest_tokens = total_tokens
if latest and (latest ~= leaf.id or raw) then
  local l = node(c, latest)
  latest_tokens = 0
  if l then
    latest_tokens = l.cum
    for _, o in ipairs(messages.overlays(c, l)) do latest_tokens = latest_tokens - o.tokens + o.c.stokens end
  end
end
latest_tokens = latest_tokens + messages.prompt_tokens(c)

-- at returns what stands at read position pos: a depth (a message of the
-- path), or an overlay.
local function at(pos)
  local shift = 0
  for _, o in ipairs(ovs) do
    local op = o.fd - shift
    if pos < op then return pos + shift end
    if pos == op then return nil, o end
    shift = shift + (o.td - o.fd)
  end
  return pos + shift
end

-- pos_of returns the read position of cursor id on the path, or nil.
local function pos_of(id)
  local cid = string.match(id, '^compaction:(.+)$')
  local shift = 0
  if cid then
    for _, o in ipairs(ovs) do
      if o.c.id == cid then return o.fd - shift end
      shift = shift + (o.td - o.fd)
    end
    return nil
  end
  local m = node(c, id)
  if not m or m.depth > leaf.depth or ancestor(c, leaf, m.depth).id ~= m.id then return nil end
  for _, o in ipairs(ovs) do
    if m.depth < o.fd then break end
    if m.depth <= o.td then return nil end -- inside a compacted range
    shift = shift + (o.td - o.fd)
  end
  return m.depth - shift
end

local last = total - 1
local cur
if kind ~= '' then
  cur = pos_of(cursor)
  if not cur then return reply.ok('invalid_cursor', cursor) end
end
local lo, hi
local forward -- the page continues toward the leaf (next_cursor at hi)
if order == 'asc' then
  forward = kind ~= 'before'
else
  forward = kind == 'before'
end
if forward then
  if kind == '' then lo = offset else lo = cur + 1 + offset end
  hi = math.min(last, lo + limit - 1)
else
  if kind == '' then hi = last - offset else hi = cur - 1 - offset end
  lo = math.max(0, hi - limit + 1)
end
-- items of the page, deepest first: {id=} a message or {o=} an overlay
local items = {}
if lo <= hi and hi >= 0 and lo <= last then
  local v -- the message at the previous position, when it was one
  for pos = hi, lo, -1 do
    local d, o = at(pos)
    if o then
      items[#items + 1] = { o = o }
      v = nil
    else
      if v and v.depth == d + 1 then v = node(c, v.parent) else v = ancestor(c, leaf, d) end
      items[#items + 1] = { id = v.id }
    end
  end
end
-- The page is cut before the answer passes max_bytes, on the side away
-- from where it starts (walk: from lo deeper when forward, else from hi up),
-- keeping at least one message; next_cursor then continues it.
local walk = {}
if forward then
  for i = #items, 1, -1 do walk[#walk + 1] = items[i] end
else
  walk = items
end
local size, kept, cut = 0, {}, 0
for _, it in ipairs(walk) do
  if it.o then
    it.json = messages.synthetic(it.o)
    size = size + #it.json + 1
  else
    size = size + redis.call('HSTRLEN', c.msgs, it.id) + 1
  end
  if size > max_bytes and #kept > 0 then
    cut = 1
    break
  end
  kept[#kept + 1] = it
end
local next_cursor = ''
if #kept > 0 and (cut == 1 or (forward and hi < last) or (not forward and lo > 0)) then
  local k = kept[#kept]
  next_cursor = k.id or ('compaction:' .. k.o.c.id)
end
local ids = {}
for _, it in ipairs(kept) do
  if it.id then ids[#ids + 1] = it.id end
end
local bodies = {}
if #ids > 0 then
  local got = redis.call('HMGET', c.msgs, unpack(ids))
  for i, id in ipairs(ids) do bodies[id] = got[i] end
end
local out = reply.ok('page', total, total_tokens, next_cursor, latest_tokens, cut)
-- kept is in walk order: shallow first when forward
local from, to, step = 1, #kept, 1
if (order == 'asc') ~= forward then from, to, step = #kept, 1, -1 end
for i = from, to, step do
  local it = kept[i]
  out[#out + 1] = it.json or bodies[it.id] or false
end
return out
