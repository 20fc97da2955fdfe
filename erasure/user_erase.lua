-- user_erase: one bounded step of erasing a user (DELETE /v1/users/{u}).
-- The user's progress key erasure.key(c) (agent_user_erasure:<tag><sha1(u)>, a
-- hash: phase, cursor, set, zcursor, sessions, erased, node) is the fence every
-- write of the user checks first (lib/erasure.lua): from the first step on
-- nothing of the user is written, so a SCAN of the user's keys misses none.
--   phase 'keys': one SCAN of the node holding the user's slot, MATCH
--     *:<tag><u>*; of the keys it meets, those of a session family of the
--     user (keys.session) erase that session: its place in the status,
--     expiry and metadata indexes, then every own key (UNLINK, freed off
--     Redis's thread); those of a user family (ARGV[5]) are unlinked, a
--     metadata index after its members left the bucket's index of the pair.
--     A step erases at most ARGV[7] sessions and ARGV[7] * 50 index
--     members; past that it keeps its cursor, and the next step meets the
--     rest again (what it erased is gone).
--   phase 'members': ZSCAN of the bucket's status sets and expiry set,
--     MATCH <u>:*, removing the members of sessions Redis expired (their
--     keys gone, the sweep not yet run).
--   phase 'meta': SCAN of the bucket's metadata indexes across users
--     (agent_session_meta_global:<tag>*), each ZSCANned for the user's
--     members: those of sessions that expired with the user's own index of
--     the pair.
--   phase 'done': the key stays erasure.SETTLE s more, refusing writes sent
--     before the erasure answered.
-- A SCAN or ZSCAN cursor is good only on the server that gave it (its
-- run_id, kept as 'node'): a step on another one (a failover, a restart,
-- the slot migrated) scans its phase again from the start; what was
-- erased stays erased.
-- KEYS[1..15] the keys of session '-' of the user (lib/session.lua): its
--   user sets, the bucket's status sets and expiry set are used
-- ARGV[1..4] TTL, max entries, user_id, '-' (lib/session.lua)
-- ARGV[5] the user families' prefixes, space separated
-- ARGV[6] SCAN COUNT
-- ARGV[7] the most sessions one step erases
-- ARGV[8] the progress key's TTL while erasing (s)
-- returns (reply.lua) {'ok', done (1/0), remaining}: remaining estimates the
--   user's sessions left (at least 1 until done).
--- @include reply
--- @include keys
--- @include meta
--- @include erasure
--- @include session

local c = session.open(KEYS, ARGV)
local count, max_sessions = tonumber(ARGV[6]), tonumber(ARGV[7])
local max_members = max_sessions * 50
local fence = erasure.key(c)
local st = redis.call('HMGET', fence, 'phase', 'cursor', 'set', 'zcursor', 'sessions', 'erased', 'node')
local phase, cursor, set, zcursor = st[1], st[2] or '0', tonumber(st[3] or '1'), st[4] or '0'
local total, erased = tonumber(st[5] or '0'), tonumber(st[6] or '0')
if phase == 'done' then return reply.ok(1, 0) end
local info = redis.pcall('INFO', 'server')
local node = type(info) == 'string' and string.match(info, 'run_id:(%x+)') or ''
if phase and st[7] ~= node then
  cursor, zcursor = '0', '0'
  redis.call('HDEL', fence, 'mkey', 'dn')
end
if not phase then
  phase = 'keys'
  for _, k in pairs(c.user_sets) do
    local n = redis.pcall('ZCARD', k)
    if type(n) == 'number' then total = total + n end
  end
end

local function remaining()
  return math.max(1, total - erased)
end

-- zrem removes members from zset key, ignoring a key of another type (the
-- user's data goes whatever another program wrote).
local function zrem(key, members)
  for i = 1, #members, 500 do
    redis.pcall('ZREM', key, unpack(members, i, math.min(i + 499, #members)))
  end
end

-- erase_session removes session sid of the user from every index, then
-- every own key of it.
local function erase_session(sid)
  local s = session.at(c, sid)
  local m = redis.pcall('HGET', s.record, 'metadata')
  if type(m) == 'string' then
    local ok, decoded = pcall(cjson.decode, m)
    if ok and type(decoded) == 'table' then
      for k, v in pairs(decoded) do
        if type(k) == 'string' and type(v) == 'string' then
          local uk, gk = meta.names(s, k, v)
          zrem(uk, { sid })
          zrem(gk, { s.gid })
        end
      end
    end
  end
  for _, status in ipairs(session.STATUSES) do
    zrem(s.user_sets[status], { sid })
    zrem(s.global_sets[status], { s.gid })
  end
  zrem(s.expiry, { s.gid })
  redis.call('UNLINK', unpack(session.own_keys(s)))
end

-- erase_meta_index takes up to budget members of the user's metadata index
-- key (pair after the head) out of the bucket's index of the pair; returns
-- how many it took and whether the key is gone.
local function erase_meta_index(key, pair, budget)
  local ms = redis.pcall('ZRANGE', key, 0, budget - 1)
  if type(ms) ~= 'table' or ms.err then
    redis.call('UNLINK', key)
    return 0, true
  end
  local gids = {}
  for i, m in ipairs(ms) do gids[i] = c.uid .. ':' .. m end
  zrem('agent_session_meta_global:' .. c.tag .. pair, gids)
  if #ms < budget then
    redis.call('UNLINK', key)
    return #ms, true
  end
  zrem(key, ms)
  return #ms, redis.call('EXISTS', key) == 0
end

if phase == 'keys' then
  local sess, user = {}, {}
  for _, p in ipairs(keys.session) do sess[p] = true end
  for p in string.gmatch(ARGV[5], '%S+') do user[p] = true end
  local head = c.tag .. c.uid
  local r = redis.call('SCAN', cursor, 'MATCH', '*:' .. head .. '*', 'COUNT', count)
  local seen, n, members, whole = {}, 0, 0, true
  for _, k in ipairs(r[2]) do
    local p, rest = string.match(k, '^([^:]+):(.*)$')
    if p and string.sub(rest, 1, #head) == head then
      local after = string.sub(rest, #head + 1)
      local sid = sess[p] and string.match(after, '^:([^:]+)$')
      if sid and not seen[sid] then
        if n >= max_sessions then
          whole = false
        else
          seen[sid], n = true, n + 1
          erase_session(sid)
        end
      elseif user[p] and (after == '' or string.sub(after, 1, 1) == ':') then
        if p == 'agent_session_meta' and after ~= '' then
          local took, gone = erase_meta_index(k, string.sub(after, 2), math.max(1, max_members - members))
          members = members + took
          if not gone then whole = false end
        else
          redis.call('UNLINK', k)
        end
      end
    end
  end
  erased = erased + n
  if whole then cursor = r[1] end
  if whole and cursor == '0' then phase, set, zcursor = 'members', 1, '0' end
  redis.call('HSET', fence, 'phase', phase, 'cursor', cursor, 'set', set, 'zcursor', zcursor,
    'sessions', total, 'erased', erased, 'node', node)
  redis.call('EXPIRE', fence, tonumber(ARGV[8]))
  return reply.ok(0, remaining())
end

-- zscan_user removes the user's members ("<u>:<s>") from zset key, from
-- ZSCAN cursor zc on, until the scan ends or about budget members were
-- examined; returns the cursor to go on from ('0': done) and the members
-- examined.
local function zscan_user(key, zc, budget)
  local examined = 0
  repeat
    local z = redis.pcall('ZSCAN', key, zc, 'MATCH', c.uid .. ':*', 'COUNT', 100)
    if type(z) ~= 'table' or z.err then return '0', examined end
    local found = {}
    for i = 1, #z[2], 2 do found[#found + 1] = z[2][i] end
    zrem(key, found)
    zc, examined = z[1], examined + 100
  until zc == '0' or examined >= budget
  return zc, examined
end

local budget = count * 5
if phase == 'members' then
  local sets = { c.global_sets.running, c.global_sets.completed, c.global_sets.failed, c.expiry }
  zcursor = zscan_user(sets[set], zcursor, budget)
  if zcursor == '0' then set = set + 1 end
  if set > #sets then phase, cursor = 'meta', '0' end
  redis.call('HSET', fence, 'phase', phase, 'cursor', cursor, 'set', set, 'zcursor', zcursor, 'node', node)
  redis.call('EXPIRE', fence, tonumber(ARGV[8]))
  return reply.ok(0, remaining())
end

-- phase 'meta': the bucket's metadata indexes (one per pair, across users)
-- may hold members of the user's sessions that expired with the user's own
-- index of the pair. The key under way (mkey, from zcursor on) goes first;
-- the keys of this SCAN batch finished are noted (by SHA1) until the
-- batch is done, so a batch of several big keys still ends.
local extra = redis.call('HMGET', fence, 'mkey', 'dn')
local mkey, finished = extra[1], {}
for h in string.gmatch(extra[2] or '', '%S+') do finished[h] = true end
local r = redis.call('SCAN', cursor, 'MATCH', 'agent_session_meta_global:' .. c.tag .. '*', 'COUNT', count)
local order = {}
if mkey then order[1] = mkey end
for _, k in ipairs(r[2]) do
  if k ~= mkey then order[#order + 1] = k end
end
local spent = 0
for _, k in ipairs(order) do
  local h = redis.sha1hex(k)
  if not finished[h] then
    local zc, examined = '0', 0
    if k == mkey then zc = zcursor end
    zc, examined = zscan_user(k, zc, math.max(100, budget - spent))
    spent = spent + examined
    if zc ~= '0' then
      local dn = {}
      for f in pairs(finished) do dn[#dn + 1] = f end
      redis.call('HSET', fence, 'mkey', k, 'zcursor', zc, 'dn', table.concat(dn, ' '), 'cursor', cursor, 'node', node)
      redis.call('EXPIRE', fence, tonumber(ARGV[8]))
      return reply.ok(0, remaining())
    end
    finished[h] = true
  end
end
redis.call('HDEL', fence, 'mkey', 'dn')
if r[1] ~= '0' then
  redis.call('HSET', fence, 'cursor', r[1], 'zcursor', '0', 'node', node)
  redis.call('EXPIRE', fence, tonumber(ARGV[8]))
  return reply.ok(0, remaining())
end
redis.call('HSET', fence, 'phase', 'done', 'cursor', '0', 'zcursor', '0', 'erased', erased)
redis.call('EXPIRE', fence, erasure.SETTLE)
return reply.ok(1, 0)
