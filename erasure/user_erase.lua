-- user_erase: one bounded step of erasing a user (DELETE /v1/users/{u}).
-- The fence and the progress live in the user's marker c.marker
-- (agent_user_marker:<tag><sha1(u)>, lib/session.lua), named by the user's
-- SHA1 so that it may outlive the erasure without naming the user:
--   fence  "user_erasing <text>": from the first step on, session.begin
--          refuses every write of the user before its first write (and
--          events_watch every mark), so a SCAN of the user's keys misses
--          none written behind it
--   fence:phase, fence:cursor, fence:set, fence:zcursor, fence:sessions,
--   fence:erased, fence:node, fence:mkey, fence:dn  the progress (the
--          fence's own fields: no module may register a field "fence")
-- The phases:
--   'keys': one SCAN of the node holding the user's slot, MATCH
--     *:<tag><u>*; of the keys it meets, one of a session family
--     (keys.session) erases that session: its members of the status and
--     expiry sets and of the indexes its record lists (idx), then every key
--     of the families its record lists (fams; every registered family for a
--     session without a record), and the key met; one of a user family
--     (ARGV[2]) is unlinked. A step erases at most ARGV[5] sessions; past
--     that it keeps its cursor, and the next step meets the rest again
--     (what it erased is gone).
--   'members': ZSCAN of the bucket's status sets and expiry set, MATCH
--     <u>:*, removing the members of sessions Redis expired (their keys
--     gone, the sweep not yet run).
--   'sweep': for each prefix of ARGV[3] (the bucket's indexes across users,
--     members "<u>:<s>": the metadata indexes), a SCAN of its keys, each
--     ZSCANned for the user's members: those of sessions that expired.
--   done: the keys the marker lists (session.keep) are unlinked, and the
--     marker is emptied but for the fence, which stays ARGV[7] s, refusing
--     writes sent before the erasure answered. A fence without a phase is
--     a finished erasure: a step then answers done at once.
-- A step examines about five times the SCAN COUNT index members at most
-- beyond its sessions' own. A SCAN or ZSCAN
-- cursor is good only on the server that gave it (its run_id, kept as
-- fence:node): a step on another one (a failover, a restart, the slot
-- migrated) scans its phase again from the start; what was erased stays
-- erased.
-- KEYS[1] the record of session '-' of the user, KEYS[2] the user's marker
--   (lib/session.lua: its tag, user and marker; no session is written)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the user families' prefixes, space separated
-- ARGV[3] the prefixes of the bucket's indexes across users the sweep
--   reads, space separated
-- ARGV[4] SCAN COUNT
-- ARGV[5] the most sessions one step erases
-- ARGV[6] the marker's TTL while erasing (s)
-- ARGV[7] how long the fence outlives the erasure (s)
-- returns (reply.lua) {'ok', done (1/0), remaining}: remaining estimates the
--   user's sessions left (at least 1 until done).
--- @include reply
--- @include keys
--- @include session

local c = session.open(KEYS, ARGV)
local count, max_sessions = tonumber(ARGV[4]), tonumber(ARGV[5])
local keep_ttl, settle = tonumber(ARGV[6]), tonumber(ARGV[7])
local M = c.marker
local TEXT = 'the user is being erased (DELETE /v1/users/{user_id}); nothing was written: its writes are refused'
  .. ' until the erasure is done and ' .. settle .. ' s after'
local F = { 'fence', 'fence:phase', 'fence:cursor', 'fence:set', 'fence:zcursor', 'fence:sessions',
  'fence:erased', 'fence:node', 'fence:mkey', 'fence:dn', 'keys' }
local st = redis.pcall('HMGET', M, unpack(F))
if st.err then
  -- a marker of another type (another program wrote it): it goes
  redis.call('UNLINK', M)
  st = {}
end
for i = 1, #F do
  if not st[i] then st[i] = nil end
end
local phase = st[2]
if st[1] and not phase then return reply.ok(1, 0) end
local cursor, set, zcursor = st[3] or '0', tonumber(st[4] or '1'), st[5] or '0'
local total, erased = tonumber(st[6] or '0'), tonumber(st[7] or '0')
local mkey, dn = st[9], st[10]
local info = redis.pcall('INFO', 'server')
local node = type(info) == 'string' and string.match(info, 'run_id:(%x+)') or ''
if phase and st[8] ~= node then
  cursor, zcursor, mkey, dn = '0', '0', nil, nil
  redis.call('HDEL', M, 'fence:mkey', 'fence:dn')
end
if not phase then
  phase = 'keys'
  for _, status in ipairs(session.STATUSES) do
    local n = redis.pcall('ZCARD', session.user_set(c, status))
    if type(n) == 'number' then total = total + n end
  end
end

local function remaining()
  return math.max(1, total - erased)
end

-- save writes the progress (the fence with it) and keeps the marker
-- keep_ttl s from this step.
local function save(fields)
  redis.call('HSET', M, 'fence', 'user_erasing ' .. TEXT, 'fence:phase', phase, 'fence:cursor', cursor,
    'fence:set', set, 'fence:zcursor', zcursor, 'fence:sessions', total, 'fence:erased', erased,
    'fence:node', node, unpack(fields or {}))
  redis.call('EXPIRE', M, keep_ttl)
  return reply.ok(0, remaining())
end

-- zrem removes members from zset key, ignoring a key of another type (the
-- user's data goes whatever another program wrote).
local function zrem(key, members)
  for i = 1, #members, 500 do
    redis.pcall('ZREM', key, unpack(members, i, math.min(i + 499, #members)))
  end
end

-- erase_session removes session sid of the user from every index its
-- record names (the core's fields: status, fams, idx), then every key of
-- the families it has (session.own_keys).
local function erase_session(sid)
  local s = session.at(c, sid)
  local r = redis.pcall('HMGET', s.record, 'status', 'fams', 'idx')
  if r.err then r = {} end
  local statuses = session.STATUSES
  if r[1] and session.IS_STATUS[r[1]] then statuses = { r[1] } end
  for _, status in ipairs(statuses) do
    zrem(session.user_set(s, status), { sid })
    zrem(session.global_set(s, status), { s.gid })
  end
  zrem(session.expiry(s), { s.gid })
  -- idx: "<kind><key>", kind s or S for a user's index (members session
  -- ids), g or G for the bucket's (members "<u>:<s>")
  local ok, idx = pcall(cjson.decode, r[3] or '[]')
  if ok and type(idx) == 'table' then
    for _, entry in ipairs(idx) do
      if type(entry) == 'string' then
        local kind = string.sub(entry, 1, 1)
        zrem(string.sub(entry, 2), { (kind == 's' or kind == 'S') and sid or s.gid })
      end
    end
  end
  s.fams_text = r[2] or nil
  local own = session.own_keys(s)
  redis.call('UNLINK', unpack(own))
  return own
end

-- unlink unlinks the keys of list, 500 a command.
local function unlink(list)
  for i = 1, #list, 500 do
    redis.call('UNLINK', unpack(list, i, math.min(i + 499, #list)))
  end
end

if phase == 'keys' then
  local sess, user = {}, {}
  for _, p in ipairs(keys.session) do sess[p] = true end
  for p in string.gmatch(ARGV[2], '%S+') do user[p] = true end
  local head = c.tag .. c.uid
  local r = redis.call('SCAN', cursor, 'MATCH', '*:' .. head .. '*', 'COUNT', count)
  local seen, gone, rest_keys, n, whole = {}, {}, {}, 0, true
  for _, k in ipairs(r[2]) do
    local p, rest = string.match(k, '^([^:]+):(.*)$')
    if p and string.sub(rest, 1, #head) == head then
      local after = string.sub(rest, #head + 1)
      local sid = sess[p] and string.match(after, '^:([^:]+)$')
      if sid then
        if not seen[sid] and n >= max_sessions then
          whole = false
        else
          if not seen[sid] then
            seen[sid], n = true, n + 1
            for _, own in ipairs(erase_session(sid)) do gone[own] = true end
          end
          -- a key of the session its record does not list goes too
          if not gone[k] then rest_keys[#rest_keys + 1] = k end
        end
      elseif user[p] and (after == '' or string.sub(after, 1, 1) == ':') then
        rest_keys[#rest_keys + 1] = k
      end
    end
  end
  unlink(rest_keys)
  erased = erased + n
  if whole then cursor = r[1] end
  if whole and cursor == '0' then phase, set, zcursor = 'members', 1, '0' end
  return save()
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
  local sets = { session.expiry(c) }
  for _, status in ipairs(session.STATUSES) do sets[#sets + 1] = session.global_set(c, status) end
  local spent = 0
  while set <= #sets and spent < budget do
    local examined
    zcursor, examined = zscan_user(sets[set], zcursor, budget - spent)
    spent = spent + examined
    if zcursor == '0' then set = set + 1 end
  end
  if set > #sets then phase, cursor, set = 'sweep', '0', 1 end
  return save()
end

-- phase 'sweep': the bucket's indexes across users of prefix number set
-- may hold members of the user's sessions that expired. The key under way
-- (fence:mkey, from zcursor on) goes first; the keys of this SCAN batch
-- finished are noted (by SHA1, in fence:dn) until the batch is done, so a
-- batch of several big keys still ends.
local prefixes = {}
for p in string.gmatch(ARGV[3], '%S+') do prefixes[#prefixes + 1] = p end
if set <= #prefixes then
  local finished = {}
  for h in string.gmatch(dn or '', '%S+') do finished[h] = true end
  local r = redis.call('SCAN', cursor, 'MATCH', prefixes[set] .. ':' .. c.tag .. '*', 'COUNT', count)
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
        zcursor = zc
        return save({ 'fence:mkey', k, 'fence:dn', table.concat(dn, ' ') })
      end
      finished[h] = true
    end
  end
  if mkey or dn then redis.call('HDEL', M, 'fence:mkey', 'fence:dn') end
  zcursor = '0'
  if r[1] ~= '0' then
    cursor = r[1]
    return save()
  end
  set, cursor = set + 1, '0'
  if set <= #prefixes then return save() end
end
-- the last prefix swept: done in this step

-- done: the keys the marker lists (the SCAN met those named by the user),
-- then the marker but for the fence, for settle s
local ok, kept = pcall(cjson.decode, st[11] or '[]')
local doomed = {}
if ok and type(kept) == 'table' then
  for _, k in ipairs(kept) do
    if type(k) == 'string' then doomed[#doomed + 1] = k end
  end
end
doomed[#doomed + 1] = M
unlink(doomed)
redis.call('HSET', M, 'fence', 'user_erasing ' .. TEXT)
redis.call('EXPIRE', M, settle)
return reply.ok(1, 0)
