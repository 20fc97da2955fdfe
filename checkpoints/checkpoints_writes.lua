-- checkpoints_writes: store a task's pending writes against a checkpoint
-- of the thread (the session), as LangGraph's savers do: a write to a
-- special channel (idx < 0: error, scheduled, interrupt, resume) replaces
-- the task's earlier one; any other keeps the first stored for its
-- (task_id, idx), so a retried task writes once.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] checkpoint_ns, ARGV[3] checkpoint_id, ARGV[4] task_id,
-- ARGV[5] task_path ('' none)
-- ARGV[6] the most writes a checkpoint keeps
-- ARGV[7] the most checkpoint ids a thread holds (CHECKPOINTS_MAX_PER_THREAD):
--   writes to an id without a stored checkpoint make it count, so writes to
--   ids never stored cannot grow the thread without limit
-- ARGV[8..] pairs: idx, the write {"channel","type","data"}
-- emits checkpoint_writes {"checkpoint_ns","checkpoint_id","task_id","stored"}.
-- A write may come before its checkpoint: LangGraph puts a checkpoint and
-- the writes against it concurrently.
-- returns (reply.lua) {'ok', stored, started}: the writes stored now, 1
--   when this write started the session; {'refused',
--   'checkpoint_writes_full', ...} past the checkpoint's cap; {'refused',
--   'checkpoints_full', ...} when a new id would pass the thread's; {'refused',
--   'key_wrong_type', ...} (a key it reads or writes holds another type,
--   or the record is not what the core keeps), {'refused', ...} when the
--   user is fenced; nothing written when refused.
-- Bounded: at most 1 000 writes a call (the sidecar's check), three
--   commands each.
--- @include reply
--- @include guard
--- @include session
--- @include events
--- @include checkpoints

local c = checkpoints.open(session.open(KEYS, ARGV))
local refused = session.begin(c)
if refused then return refused end
local ns, id, task, path = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local SEP = checkpoints.SEP
local wp = checkpoints.join('w', ns, id)
-- what each write does, decided before the first write
local plan, seen, new = {}, {}, 0
for i = 8, #ARGV, 2 do
  local idx = tonumber(ARGV[i])
  local f = wp .. SEP .. task .. SEP .. checkpoints.idx12(idx)
  local old = seen[f]
  if old == nil then
    old, refused = guard.read('HGET', c.cp_hash, 'hash', f)
    if refused then return refused end
    if not old then new = new + 1 end
  end
  if not (old and idx >= 0) then
    plan[#plan + 1] = { f, idx, old, ARGV[i + 1] }
    seen[f] = path .. SEP
  end
end
-- orphan: the id to count as held (writes before its checkpoint); empty:
-- the thread holds nothing yet (neither key exists)
local orphan, empty
if new > 0 then
  local n
  n, refused = guard.read('ZLEXCOUNT', c.cp_order, 'zset', '[' .. wp .. SEP, checkpoints.above(wp))
  if refused then return refused end
  if n + new > tonumber(ARGV[6]) then
    return reply.refused('checkpoint_writes_full', 'the checkpoint holds ' .. n .. ' pending writes; '
      .. new .. ' more would pass the most it keeps (' .. ARGV[6] .. ')')
  end
  local o = checkpoints.join('o', ns, id)
  if n == 0 and redis.call('HEXISTS', c.cp_hash, checkpoints.join('c', ns, id)) == 0
    and not redis.call('ZSCORE', c.cp_order, o) then
    local held = checkpoints.held(c)
    if held >= tonumber(ARGV[7]) then
      return reply.refused('checkpoints_full', 'the thread holds ' .. held .. ' checkpoint ids (stored, or'
        .. ' holding writes), the most it may keep (CHECKPOINTS_MAX_PER_THREAD); writes to checkpoint ' .. id
        .. ' would add one')
    end
    orphan, empty = o, held == 0
  end
end
if #plan > 0 then
  session.use(c, checkpoints.HASH, 'hash', true)
  session.use(c, checkpoints.ORDER, 'zset', new > 0)
end
events.use(c)
refused = session.commit(c)
if refused then return refused end

if orphan then redis.call('ZADD', c.cp_order, 0, orphan) end
for _, p in ipairs(plan) do
  local f, idx, old, value = p[1], p[2], p[3], p[4]
  if old then
    local old_path = string.sub(old, 1, (string.find(old, SEP, 1, true) or 1) - 1)
    if old_path ~= path then
      redis.call('ZREM', c.cp_order, checkpoints.join(wp, old_path, task, checkpoints.idx12(idx)))
    end
  end
  redis.call('HSET', c.cp_hash, f, path .. SEP .. value)
  redis.call('ZADD', c.cp_order, 0, checkpoints.join(wp, path, task, checkpoints.idx12(idx)))
end
-- keys made anew in a session that had them (another program removed
-- them) get their TTL
if empty then
  session.made(c, checkpoints.HASH)
  session.made(c, checkpoints.ORDER)
end
events.emit(c, 'checkpoint_writes', 'checkpoint', id,
  '{"checkpoint_ns":' .. cjson.encode(ns) .. ',"checkpoint_id":' .. cjson.encode(id)
  .. ',"task_id":' .. cjson.encode(task) .. ',"stored":' .. #plan .. '}')
local started = session.finish(c)
return session.reply(c, reply.ok(#plan, started and 1 or 0))
