-- checkpoints_put: store one LangGraph checkpoint of a thread (the
-- session): the checkpoint, its metadata, its channel versions and the
-- values of the channels it changed, then the session's bookkeeping. A put
-- of an id the namespace holds replaces it (LangGraph's put is an upsert).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] checkpoint_ns, ARGV[3] checkpoint_id
-- ARGV[4] the checkpoint {"parent","type","data"}, ARGV[5] its metadata
-- ARGV[6] its channel versions, packed (<channel>\0<version>\0...; '' none)
-- ARGV[7] the most checkpoint ids a thread holds (CHECKPOINTS_MAX_PER_THREAD;
--   ids holding writes without a stored checkpoint count too)
-- ARGV[8] the most channel values a thread holds (a put to an id it holds
--   adds values too)
-- ARGV[9..] pairs: <channel>\0<version>, the value {"type","data"}
-- emits checkpoint_put {"checkpoint_ns","checkpoint_id"}.
-- returns (reply.lua) {'ok', started}: started 1 when this write started
--   the session; {'refused', 'checkpoints_full', ...} past either cap,
--   {'refused', 'key_wrong_type', ...} (a key it reads or writes holds
--   another type, or the record is not what the core keeps), {'refused',
--   ...} when the user is fenced; nothing written when refused.
-- Bounded: the sidecar sends at most 1 000 channels and
--   SIDECAR_MAX_MESSAGE_BODY_BYTES of values; O(channels + log n) commands
--   (an HEXISTS per value to count the new ones).
--- @include reply
--- @include guard
--- @include session
--- @include events
--- @include checkpoints

local c = checkpoints.open(session.open(KEYS, ARGV))
local refused = session.begin(c)
if refused then return refused end
local ns, id = ARGV[2], ARGV[3]
local field = checkpoints.join('c', ns, id)
local orphan = checkpoints.join('o', ns, id)
local stored
stored, refused = guard.read('HEXISTS', c.cp_hash, 'hash', field)
if refused then return refused end
-- empty: the thread holds nothing yet (neither key exists)
local order_read, empty = false, false
if stored == 0 then
  local was_orphan
  was_orphan, refused = guard.read('ZSCORE', c.cp_order, 'zset', orphan)
  if refused then return refused end
  order_read = true
  local held = checkpoints.held(c)
  empty = held == 0
  -- an id holding writes already counts: storing it adds none
  local n = held - (was_orphan and 1 or 0)
  if n >= tonumber(ARGV[7]) then
    return reply.refused('checkpoints_full', 'the thread holds ' .. n .. ' checkpoint ids (stored, or holding'
      .. ' writes), the most it may keep (CHECKPOINTS_MAX_PER_THREAD); delete the thread or start another')
  end
end
local fields = {
  field, ARGV[4],
  checkpoints.join('m', ns, id), ARGV[5],
  checkpoints.join('v', ns, id), ARGV[6],
}
local added, seen = 0, {}
for i = 9, #ARGV, 2 do
  local bf = checkpoints.join('b', ns, ARGV[i])
  if not seen[bf] and redis.call('HEXISTS', c.cp_hash, bf) == 0 then added = added + 1 end
  seen[bf] = true
  fields[#fields + 1] = bf
  fields[#fields + 1] = ARGV[i + 1]
end
if added > 0 then
  local had = tonumber(redis.call('HGET', c.cp_hash, checkpoints.VALUES) or '0')
  if had + added > tonumber(ARGV[8]) then
    return reply.refused('checkpoints_full', 'the thread holds ' .. had .. ' channel values; ' .. added
      .. ' more would pass the most it may keep (' .. ARGV[8] .. ', 100 x CHECKPOINTS_MAX_PER_THREAD);'
      .. ' delete the thread or start another')
  end
  fields[#fields + 1] = checkpoints.VALUES
  fields[#fields + 1] = had + added
end
session.use(c, checkpoints.HASH, 'hash', true)
session.use(c, checkpoints.ORDER, 'zset', order_read)
events.use(c)
refused = session.commit(c)
if refused then return refused end

redis.call('HSET', c.cp_hash, unpack(fields))
local members = redis.call('ZADD', c.cp_order, 0, field, 0, checkpoints.join('t', id, ns))
redis.call('ZREM', c.cp_order, orphan)
-- keys made anew in a session that had them (another program removed
-- them) get their TTL: an empty thread, or a stored id's members gone
if empty then session.made(c, checkpoints.HASH) end
if empty or (stored == 1 and members == 2) then session.made(c, checkpoints.ORDER) end
events.emit(c, 'checkpoint_put', 'checkpoint', id,
  '{"checkpoint_ns":' .. cjson.encode(ns) .. ',"checkpoint_id":' .. cjson.encode(id) .. '}')
local started = session.finish(c)
return session.reply(c, reply.ok(started and 1 or 0))
