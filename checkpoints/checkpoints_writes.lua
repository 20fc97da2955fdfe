-- checkpoints_writes: store a task's pending writes against a checkpoint
-- of the thread (the session), as LangGraph's savers do: a write to a
-- special channel (idx < 0: error, scheduled, interrupt, resume) replaces
-- the task's earlier one; any other keeps the first stored for its
-- (task_id, idx), so a retried task writes once.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] checkpoint_ns, ARGV[6] checkpoint_id, ARGV[7] task_id,
-- ARGV[8] task_path ('' none)
-- ARGV[9] the most writes a checkpoint keeps
-- ARGV[10] the most checkpoint ids a thread holds (CHECKPOINTS_MAX_PER_THREAD):
--   writes to an id without a stored checkpoint make it count, so writes to
--   ids never stored cannot grow the thread without limit
-- ARGV[11..] pairs: idx, the write {"channel","type","data"}
-- emits checkpoint_writes {"checkpoint_ns","checkpoint_id","task_id","stored"}.
-- A write may come before its checkpoint: LangGraph puts a checkpoint and
-- the writes against it concurrently.
-- returns (reply.lua) {'ok', stored, started}: the writes stored now, 1
--   when this write made the session's record; {'refused',
--   'checkpoint_writes_full', ...} past the checkpoint's cap; {'refused',
--   'checkpoints_full', ...} when a new id would pass the thread's; {'refused',
--   'key_wrong_type', ...}; nothing written when refused.
-- Bounded: at most 1 000 writes a call (the sidecar's check), three
--   commands each.
--- @include reply
--- @include session
--- @include events
--- @include checkpoints

local c = checkpoints.open(session.open(KEYS, ARGV))
local ns, id, task, path = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local refused, rec = session.guard(c, 'keep', { c.cp_hash, 'hash' }, { c.cp_order, 'zset' })
if refused then return refused end
local SEP = checkpoints.SEP
local fresh_key = redis.call('EXISTS', c.cp_hash) == 0
local wp = checkpoints.join('w', ns, id)
-- what each write does, decided before the first write
local plan, seen, new = {}, {}, 0
for i = 11, #ARGV, 2 do
  local idx = tonumber(ARGV[i])
  local f = wp .. SEP .. task .. SEP .. checkpoints.idx12(idx)
  local old = seen[f]
  if old == nil then
    old = redis.call('HGET', c.cp_hash, f) or false
    if not old then new = new + 1 end
  end
  if not (old and idx >= 0) then
    plan[#plan + 1] = { f, idx, old, ARGV[i + 1] }
    seen[f] = path .. SEP
  end
end
if new > 0 then
  local n = redis.call('ZLEXCOUNT', c.cp_order, '[' .. wp .. SEP, checkpoints.above(wp))
  if n + new > tonumber(ARGV[9]) then
    return reply.refused('checkpoint_writes_full', 'the checkpoint holds ' .. n .. ' pending writes; '
      .. new .. ' more would pass the most it keeps (' .. ARGV[9] .. ')')
  end
  local orphan = checkpoints.join('o', ns, id)
  if n == 0 and redis.call('HEXISTS', c.cp_hash, checkpoints.join('c', ns, id)) == 0
    and not redis.call('ZSCORE', c.cp_order, orphan) then
    local held = checkpoints.held(c)
    if held >= tonumber(ARGV[10]) then
      return reply.refused('checkpoints_full', 'the thread holds ' .. held .. ' checkpoint ids (stored, or'
        .. ' holding writes), the most it may keep (CHECKPOINTS_MAX_PER_THREAD); writes to checkpoint ' .. id
        .. ' would add one')
    end
    redis.call('ZADD', c.cp_order, 0, orphan)
  end
end
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
events.emit(c, 'checkpoint_writes', 'checkpoint', id,
  '{"checkpoint_ns":' .. cjson.encode(ns) .. ',"checkpoint_id":' .. cjson.encode(id)
  .. ',"task_id":' .. cjson.encode(task) .. ',"stored":' .. #plan .. '}')
-- a thread key just made gets the session's TTL at once
local _, started = session.finish_write(c, false, fresh_key and #plan > 0, nil, false, rec)
return reply.ok(#plan, started and 1 or 0)
