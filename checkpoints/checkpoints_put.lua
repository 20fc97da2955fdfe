-- checkpoints_put: store one LangGraph checkpoint of a thread (the
-- session): the checkpoint, its metadata, its channel versions and the
-- values of the channels it changed, then the session's bookkeeping. A put
-- of an id the namespace holds replaces it (LangGraph's put is an upsert).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] checkpoint_ns, ARGV[6] checkpoint_id
-- ARGV[7] the checkpoint {"parent","type","data"}, ARGV[8] its metadata
-- ARGV[9] its channel versions, packed (<channel>\0<version>\0...; '' none)
-- ARGV[10] the most checkpoint ids a thread holds (CHECKPOINTS_MAX_PER_THREAD;
--   ids holding writes without a stored checkpoint count too)
-- ARGV[11] the most channel values a thread holds (a put to an id it holds
--   adds values too)
-- ARGV[12..] pairs: <channel>\0<version>, the value {"type","data"}
-- emits checkpoint_put {"checkpoint_ns","checkpoint_id"}.
-- returns (reply.lua) {'ok', started}: started 1 when this write made the
--   session's record; {'refused', 'checkpoints_full', ...} past either cap,
--   {'refused', 'key_wrong_type', ...}; nothing written when refused.
-- Bounded: the sidecar sends at most 1 000 channels and
--   SIDECAR_MAX_MESSAGE_BODY_BYTES of values; O(channels + log n) commands
--   (an HEXISTS per value to count the new ones).
--- @include reply
--- @include session
--- @include events
--- @include checkpoints

local c = checkpoints.open(session.open(KEYS, ARGV))
local ns, id = ARGV[5], ARGV[6]
local refused, rec = session.guard(c, 'keep', { c.cp_hash, 'hash' }, { c.cp_order, 'zset' })
if refused then return refused end
local field = checkpoints.join('c', ns, id)
local orphan = checkpoints.join('o', ns, id)
local fresh_key = redis.call('EXISTS', c.cp_hash) == 0
if redis.call('HEXISTS', c.cp_hash, field) == 0 then
  -- an id holding writes already counts: storing it adds none
  local n = checkpoints.held(c) - (redis.call('ZSCORE', c.cp_order, orphan) and 1 or 0)
  if n >= tonumber(ARGV[10]) then
    return reply.refused('checkpoints_full', 'the thread holds ' .. n .. ' checkpoint ids (stored, or holding'
      .. ' writes), the most it may keep (CHECKPOINTS_MAX_PER_THREAD); delete the thread or start another')
  end
end
local fields = {
  field, ARGV[7],
  checkpoints.join('m', ns, id), ARGV[8],
  checkpoints.join('v', ns, id), ARGV[9],
}
local added, seen = 0, {}
for i = 12, #ARGV, 2 do
  local bf = checkpoints.join('b', ns, ARGV[i])
  if not seen[bf] and redis.call('HEXISTS', c.cp_hash, bf) == 0 then added = added + 1 end
  seen[bf] = true
  fields[#fields + 1] = bf
  fields[#fields + 1] = ARGV[i + 1]
end
if added > 0 then
  local had = tonumber(redis.call('HGET', c.cp_hash, checkpoints.VALUES) or '0')
  if had + added > tonumber(ARGV[11]) then
    return reply.refused('checkpoints_full', 'the thread holds ' .. had .. ' channel values; ' .. added
      .. ' more would pass the most it may keep (' .. ARGV[11] .. ', 100 x CHECKPOINTS_MAX_PER_THREAD);'
      .. ' delete the thread or start another')
  end
  fields[#fields + 1] = checkpoints.VALUES
  fields[#fields + 1] = had + added
end
redis.call('HSET', c.cp_hash, unpack(fields))
redis.call('ZADD', c.cp_order, 0, field, 0, checkpoints.join('t', id, ns))
redis.call('ZREM', c.cp_order, orphan)
events.emit(c, 'checkpoint_put', 'checkpoint', id,
  '{"checkpoint_ns":' .. cjson.encode(ns) .. ',"checkpoint_id":' .. cjson.encode(id) .. '}')
local _, started = session.finish_write(c, false, fresh_key, nil, false, rec)
return reply.ok(started and 1 or 0)
