-- checkpoints_read: one checkpoint of a thread (the session), by id or the
-- namespace's newest, with the values of its channels at their versions
-- and its pending writes in LangGraph's order. Writes nothing.
-- KEYS[1] the session's record (lib/session.lua; only its user, session
--   and tag are used)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] checkpoint_ns, ARGV[3] checkpoint_id ('' the newest)
-- ARGV[4] the most bytes the answer may hold
-- ARGV[5] the most writes a checkpoint keeps
-- returns (reply.lua) {'ok', id, checkpoint, metadata, channel values
--   (channel, version, value or false ...), writes (task_path, task_id,
--   idx, value ...)}; {'missing'} when there is no such checkpoint;
--   {'refused', 'checkpoint_too_large', ...} past ARGV[4].
-- Bounded: a put stores at most 1 000 channels and a checkpoint at most
--   ARGV[5] writes; the sizes are summed (HSTRLEN) before anything is read.
--- @include reply
--- @include session
--- @include checkpoints

local c = checkpoints.open(session.open(KEYS, ARGV))
local ns, id = ARGV[2], ARGV[3]
local SEP = checkpoints.SEP
if id == '' then
  id = checkpoints.latest(c, ns)
  if not id then return reply.missing() end
end
local cf, mf, vf = checkpoints.join('c', ns, id), checkpoints.join('m', ns, id), checkpoints.join('v', ns, id)
local size = redis.call('HSTRLEN', c.cp_hash, cf)
if size == 0 then return reply.missing() end
size = size + redis.call('HSTRLEN', c.cp_hash, mf)
local versions = redis.call('HGET', c.cp_hash, vf) or ''
local channels, bfields = {}, {}
if versions ~= '' then
  local parts = checkpoints.split(versions)
  for i = 1, #parts - 1, 2 do
    local bf = checkpoints.join('b', ns, parts[i], parts[i + 1])
    channels[#channels + 1] = { parts[i], parts[i + 1] }
    bfields[#bfields + 1] = bf
    size = size + redis.call('HSTRLEN', c.cp_hash, bf)
  end
end
local wp = checkpoints.join('w', ns, id)
local members = redis.call('ZRANGE', c.cp_order, '[' .. wp .. SEP, checkpoints.above(wp), 'BYLEX',
  'LIMIT', 0, tonumber(ARGV[5]))
local writes, wfields = {}, {}
for i, m in ipairs(members) do
  local p = checkpoints.split(string.sub(m, #wp + 2)) -- task_path, task_id, idx12
  local f = wp .. SEP .. p[2] .. SEP .. p[3]
  writes[i] = { p[1], p[2], tonumber(p[3]) - checkpoints.IDX_BIAS }
  wfields[i] = f
  size = size + redis.call('HSTRLEN', c.cp_hash, f)
end
if size > tonumber(ARGV[4]) then
  return reply.refused('checkpoint_too_large', 'checkpoint ' .. id .. ' with its channel values and writes'
    .. ' holds ' .. size .. ' bytes, more than an answer may (' .. ARGV[4] .. ')')
end
local head = redis.call('HMGET', c.cp_hash, cf, mf)
local values = {}
if #bfields > 0 then
  local got = redis.call('HMGET', c.cp_hash, unpack(bfields))
  for i, ch in ipairs(channels) do
    values[#values + 1] = ch[1]
    values[#values + 1] = ch[2]
    values[#values + 1] = got[i] or ''
  end
end
local out = {}
if #wfields > 0 then
  local got = redis.call('HMGET', c.cp_hash, unpack(wfields))
  for i, w in ipairs(writes) do
    local v = got[i]
    if v then
      out[#out + 1] = w[1]
      out[#out + 1] = w[2]
      out[#out + 1] = w[3]
      out[#out + 1] = string.sub(v, (string.find(v, SEP, 1, true) or 0) + 1)
    end
  end
end
return reply.ok(id, head[1], head[2] or '{}', values, out)
