-- checkpoints: the LangGraph checkpoints of a thread (a session), in two of
-- the session's own keys (checkpoints/keys.go registers their families:
-- the session's slide and delete cover them once the session has them,
-- session.use), for the module's scripts (checkpoints_*.lua), session
-- scripts on the core's per-call contract (lua/lib/session.lua):
--   agent_checkpoints:<tag><u>:<s>      hash
--     c\0<ns>\0<id>                 the checkpoint: {"parent","type","data"} (JSON made by the sidecar)
--     m\0<ns>\0<id>                 its metadata (a JSON object)
--     v\0<ns>\0<id>                 its channel versions: <channel>\0<version>\0... (packed)
--     b\0<ns>\0<channel>\0<version> a channel's value at a version: {"type","data"}
--     w\0<ns>\0<id>\0<task>\0<idx>  a pending write: <task_path>\0{"channel","type","data"}
--     #values                       how many b fields the thread holds (a count)
--   agent_checkpoint_order:<tag><u>:<s> zset, every score 0, read by lex range
--     c\0<ns>\0<id>                 a namespace's checkpoints, ids in order
--     t\0<id>\0<ns>                 every namespace's checkpoints, ids in order
--     w\0<ns>\0<id>\0<task_path>\0<task>\0<idx>  a checkpoint's writes in
--                                   LangGraph's order (task_path, task_id, idx)
--     o\0<ns>\0<id>                 a checkpoint id holding writes but not
--                                   (yet) stored: counted with the c members
--                                   against CHECKPOINTS_MAX_PER_THREAD
-- No name holds \0 (the sidecar refuses it), so \0 ends every part and a
-- range of one prefix is [<prefix>\0 .. (<prefix>\1. idx is written as 12
-- digits of idx + IDX_BIAS (special channels have negative idx).
--- @include session

local SEP = '\0'
local IDX_BIAS = 1000000
-- the two session families (checkpoints/keys.go)
local HASH = 'agent_checkpoints'
local ORDER = 'agent_checkpoint_order'

-- open adds the thread's two keys to the session context c.
local function open(c)
  c.cp_hash = session.key(c, HASH)
  c.cp_order = session.key(c, ORDER)
  return c
end

-- join is the parts joined by \0.
local function join(...)
  return table.concat({ ... }, SEP)
end

-- above is the exclusive upper bound of every member starting with
-- prefix .. '\0': the same prefix ended by \1.
local function above(prefix)
  return '(' .. prefix .. '\1'
end

-- idx12 is a write's idx as sortable digits.
local function idx12(idx)
  return string.format('%012d', tonumber(idx) + IDX_BIAS)
end

-- split cuts s at every \0.
local function split(s)
  local out, from = {}, 1
  while true do
    local at = string.find(s, SEP, from, true)
    if not at then
      out[#out + 1] = string.sub(s, from)
      return out
    end
    out[#out + 1] = string.sub(s, from, at - 1)
    from = at + 1
  end
end

-- latest is the newest checkpoint id of namespace ns, or nil.
local function latest(c, ns)
  local p = join('c', ns)
  local r = redis.call('ZRANGE', c.cp_order, above(p), '[' .. p .. SEP, 'BYLEX', 'REV', 'LIMIT', 0, 1)
  if #r == 0 then return nil end
  return string.sub(r[1], #p + 2)
end

-- held is how many checkpoint ids the thread holds: those stored and
-- those holding writes without a stored checkpoint (two ZLEXCOUNTs).
local function held(c)
  return redis.call('ZLEXCOUNT', c.cp_order, '[c' .. SEP, above('c'))
    + redis.call('ZLEXCOUNT', c.cp_order, '[o' .. SEP, above('o'))
end

return {
  HASH = HASH,
  ORDER = ORDER,
  SEP = SEP,
  VALUES = '#values',
  held = held,
  IDX_BIAS = IDX_BIAS,
  open = open,
  join = join,
  above = above,
  idx12 = idx12,
  split = split,
  latest = latest,
}
