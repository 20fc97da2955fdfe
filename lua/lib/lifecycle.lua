-- lifecycle: the session core's bookkeeping (lib/session.lua holds the
-- write's steps): the session's place in its lifecycle indexes and its
-- activity indexes, the TTLs of its keys and of the user's keys it keeps
-- alive, the families it has. c is a session context (session.open).
--
-- Lifecycle indexes (sorted sets by last activity, µs), one per stored
-- status (running, completed, failed; "abandoned" is a score range of the
-- running set): the user's agent_sessions_by_user:<tag><u>:<status>
-- (members session ids) and the bucket's agent_sessions_global:<tag><status>
-- (members "<u>:<s>"); and the bucket's expiry set
-- agent_sessions_global:<tag>expiry ("<u>:<s>" -> when the session's keys
-- expire, µs; '+inf' for none), which reads sweep.
--
-- The record's fams lists the codes of the session families the session
-- has (" e q "; keys.code), its idx the sorted sets that hold it beyond
-- the lifecycle indexes: "<kind><key>", kind 's' or 'g' an activity index
-- (members session ids, or "<u>:<s>": the bookkeeping scores them), 'S' or
-- 'G' a set that holds it under a score of its own (a delete takes it out).
-- The user's marker's keys lists the user's keys that live as long as the
-- user's sessions (session.keep).
--- @include keys
--- @include clock
--- @include guard

local STATUSES = { 'running', 'completed', 'failed' }
local IS_STATUS = { running = true, completed = true, failed = true }
-- PRUNE: members of an activity index examined per bookkeeping (prune)
local PRUNE = 2

-- key is the session's key of family prefix: <prefix>:<tag><u>:<s>.
local function key(c, prefix)
  return prefix .. ':' .. c.id
end

-- user_set and global_set are the lifecycle index of a status: the user's
-- (members session ids) and the bucket's (members "<u>:<s>").
local function user_set(c, status) return 'agent_sessions_by_user:' .. c.tag .. c.uid .. ':' .. status end
local function global_set(c, status) return 'agent_sessions_global:' .. c.tag .. status end
local function expiry(c) return 'agent_sessions_global:' .. c.tag .. 'expiry' end

-- fams_set parses the record's fams into a set of codes (the rarer
-- whole-session steps: a slide, a delete, a change of the list).
local function fams_set(c)
  local set = {}
  for code in string.gmatch(c.fams_text or '', '%S+') do
    if not (c.dropped and c.dropped[code]) then set[code] = true end
  end
  return set
end

-- had reports whether the record lists family code (and no step of this
-- write dropped it).
local function had(c, code)
  if c.dropped and c.dropped[code] then return false end
  return c.fams_text ~= nil and string.find(c.fams_text, ' ' .. code .. ' ', 1, true) ~= nil
end

-- idx is the session's list of sorted sets beyond the lifecycle indexes.
local function idx(c)
  if not c.idx then c.idx = c.idx_text and cjson.decode(c.idx_text) or {} end
  return c.idx
end

local function member(c, entry)
  local kind = string.sub(entry, 1, 1)
  if kind == 's' or kind == 'S' then return c.sid end
  return c.gid
end

local function scored(entry)
  local kind = string.sub(entry, 1, 1)
  return kind == 's' or kind == 'g'
end

-- listed adds entry to the session's idx (once); returns whether it is new.
local function listed(c, entry)
  local list = idx(c)
  for _, have in ipairs(list) do
    if have == entry then return false end
  end
  list[#list + 1] = entry
  c.idx_changed = true
  return true
end

-- index_in files the session in activity index k (per_user: members session
-- ids, else "<u>:<s>"): commit adds it (a guarded first write), every later
-- bookkeeping moves its score, a delete removes it. Before commit.
local function index_in(c, k, per_user)
  local entry = (per_user and 's' or 'g') .. k
  if listed(c, entry) then
    c.idx_new = c.idx_new or {}
    c.idx_new[entry] = true
  end
end

-- member_of notes that sorted set k holds the session under a score of its
-- owner's (a delete takes it out); the caller writes it.
local function member_of(c, k, per_user)
  listed(c, (per_user and 'S' or 'G') .. k)
end

-- index_out takes the session out of index k (ZREM) and off the list;
-- after commit.
local function index_out(c, k)
  for i, entry in ipairs(idx(c)) do
    if string.sub(entry, 2) == k then
      redis.call('ZREM', k, member(c, entry))
      table.remove(c.idx, i)
      c.idx_changed = true
      return
    end
  end
end

-- ukeys is the marker's list of the user's kept keys.
local function ukeys(c)
  if not c.ukeys then c.ukeys = c.ukeys_text and cjson.decode(c.ukeys_text) or {} end
  return c.ukeys
end

-- keep declares a user key (kind: its Redis type) this write writes, of a
-- user family that lives as long as the user's sessions: the marker lists
-- it, every slide of every session of the user gives it at least that
-- session's TTL (EXPIRE GT: a key without expiry, which a session without
-- expiry holds, keeps none), and a key listed anew gets its TTL in finish
-- (EXPIRE NX, then GT). Before commit, which checks the type of a key not
-- listed yet.
local function keep(c, k, kind)
  for _, have in ipairs(ukeys(c)) do
    if have == k then return k end
  end
  if kind then
    c.checks = c.checks or {}
    c.checks[#c.checks + 1] = { k, kind }
  end
  c.ukeys[#c.ukeys + 1] = k
  c.ukeys_new = c.ukeys_new or {}
  c.ukeys_new[#c.ukeys_new + 1] = k
  c.ukeys_changed = true
  return k
end

-- user_made notes a user key the marker lists that this write makes anew
-- (another program removed it): finish gives it its TTL.
local function user_made(c, k)
  c.user_made = c.user_made or {}
  c.user_made[#c.user_made + 1] = k
end

-- forget takes user key k off the marker's list (the write removed it).
local function forget(c, k)
  for i, have in ipairs(ukeys(c)) do
    if have == k then
      table.remove(c.ukeys, i)
      c.ukeys_changed = true
      return
    end
  end
end

-- grain is how long the bookkeeping of a session of TTL t may wait: the
-- setting's, and at most t/1000, so a TTL is never short by more than a
-- thousandth.
local function grain(c, t)
  if t > 0 then return math.min(c.grain, t * 1000) end
  return c.grain
end

local function expiry_score(at_us, t)
  if t > 0 then return string.format('%d', at_us + t * 1000000) end
  return '+inf'
end

-- zadd and zrem run ZADD/ZREM as guarded first writes: they note in undo
-- how to take them back, and answer the refusal of a key of another type.
local function zadd(undo, k, score, m, old)
  local n = redis.pcall('ZADD', k, score, m)
  if type(n) == 'table' then return guard.from_error(k, 'zset', n) end
  if n == 1 then
    undo[#undo + 1] = { 'ZREM', k, m }
  elseif old then
    undo[#undo + 1] = { 'ZADD', k, old, m }
  end
  return nil
end

local function zrem(undo, k, m, old)
  local n = redis.pcall('ZREM', k, m)
  if type(n) == 'table' then return guard.from_error(k, 'zset', n) end
  if n == 1 and old then undo[#undo + 1] = { 'ZADD', k, old, m } end
  return nil
end

-- prune drops from activity index k up to PRUNE of its least recently
-- active members whose session expired (no expiry entry, or one before now).
local function prune(c, k, per_user, now)
  local prefix = per_user and (c.uid .. ':') or ''
  for _, m in ipairs(redis.call('ZRANGE', k, 0, PRUNE - 1)) do
    local exp = redis.call('ZSCORE', expiry(c), prefix .. m)
    if not exp or (tonumber(exp) or math.huge) < now then redis.call('ZREM', k, m) end
  end
end

-- bookkeeping writes the session's lifecycle and activity indexes, to
-- status, at the time the write read (c.now), with TTL t: guarded first
-- writes, those made taken back when one refuses (a set of another type).
-- Returns the refusal, or nil.
local function bookkeeping(c, status, t)
  local n, undo = c.now_text, {}
  local old = c.slid_at and string.format('%d', c.slid_at)
  local ex = expiry(c)
  -- the expiry set first: its old score is not the last bookkeeping's time
  local fresh = redis.pcall('ZADD', ex, expiry_score(c.now, t), c.gid)
  if type(fresh) == 'table' then return guard.from_error(ex, 'zset', fresh) end
  if fresh == 1 then
    undo[1] = { 'ZREM', ex, c.gid }
  elseif c.slid_at then
    undo[1] = { 'ZADD', ex, expiry_score(c.slid_at, t), c.gid }
  end
  local moved = c.status and c.status ~= status
  local keep_old = not moved and old or nil
  local refused = zadd(undo, user_set(c, status), n, c.sid, keep_old)
    or zadd(undo, global_set(c, status), n, c.gid, keep_old)
  if not refused and moved then
    refused = zrem(undo, user_set(c, c.status), c.sid, old) or zrem(undo, global_set(c, c.status), c.gid, old)
  end
  if not refused and not c.status and fresh == 0 then
    -- a new session whose id an expired one held before the sweep ran: it
    -- leaves the sets of the other statuses
    for _, st in ipairs(STATUSES) do
      if not refused and st ~= status then
        refused = zrem(undo, user_set(c, st), c.sid) or zrem(undo, global_set(c, st), c.gid)
      end
    end
  end
  for _, entry in ipairs(idx(c)) do
    if not refused and scored(entry) then
      refused = zadd(undo, string.sub(entry, 2), n, member(c, entry), not (c.idx_new and c.idx_new[entry]) and old or nil)
    end
  end
  if refused then
    for i = #undo, 1, -1 do redis.call(unpack(undo[i])) end
    return refused
  end
  for _, entry in ipairs(idx(c)) do
    if scored(entry) then prune(c, string.sub(entry, 2), string.sub(entry, 1, 1) == 's', c.now) end
  end
  return nil
end

-- index_new files the session in the activity indexes this write added
-- (index_in) when no bookkeeping is due: at its last bookkeeping's score.
local function index_new(c)
  if not c.idx_new then return nil end
  local undo, score = {}, string.format('%d', c.slid_at)
  for entry in pairs(c.idx_new) do
    local refused = zadd(undo, string.sub(entry, 2), score, member(c, entry))
    if refused then
      for i = #undo, 1, -1 do redis.call(unpack(undo[i])) end
      return refused
    end
  end
  return nil
end

-- slide_user gives the user's keys this session keeps alive at least TTL
-- t (0: none): its activity and member sets, the keys the marker lists,
-- and the marker.
local function slide_user(c, t)
  local user = {}
  for _, entry in ipairs(idx(c)) do user[#user + 1] = string.sub(entry, 2) end
  if c.ukeys_text or c.ukeys then
    for _, k in ipairs(ukeys(c)) do user[#user + 1] = k end
    user[#user + 1] = c.marker
  end
  for _, k in ipairs(user) do
    if t > 0 then redis.call('EXPIRE', k, t, 'GT') else redis.call('PERSIST', k) end
  end
end

-- slide gives the record and every key of the families the session has
-- TTL t (0: none), and the user's keys at least t.
local function slide(c, t, set)
  local cmd = t > 0 and 'EXPIRE' or 'PERSIST'
  local function one(k)
    if t > 0 then redis.call(cmd, k, t) else redis.call(cmd, k) end
  end
  one(c.record)
  for code in pairs(set) do one(key(c, keys.prefix[code])) end
  slide_user(c, t)
end

-- list_keys writes the marker's list of the user's keys when this write
-- changed it: the keys it lists anew, and the marker, hold at least TTL t
-- from now on (EXPIRE NX, then GT); so do the kept keys made anew.
local function list_keys(c, t)
  local new = c.user_made or {}
  if c.ukeys_changed then
    redis.call('HSET', c.marker, 'keys', cjson.encode(c.ukeys))
    for _, k in ipairs(c.ukeys_new or {}) do new[#new + 1] = k end
    new[#new + 1] = c.marker
  end
  if t > 0 then
    for _, k in ipairs(new) do
      redis.call('EXPIRE', k, t, 'NX')
      redis.call('EXPIRE', k, t, 'GT')
    end
  end
end

-- unindex takes the session out of its lifecycle indexes, the expiry set
-- and every set of its idx (a delete or an erasure); for a session without
-- a record's lists (one only Cognee wrote), out of the user's sets of
-- session ids registered (keys.members) too.
local function unindex(c)
  for _, st in ipairs(c.status and { c.status } or STATUSES) do
    redis.call('ZREM', user_set(c, st), c.sid)
    redis.call('ZREM', global_set(c, st), c.gid)
  end
  redis.call('ZREM', expiry(c), c.gid)
  for _, entry in ipairs(idx(c)) do redis.call('ZREM', string.sub(entry, 2), member(c, entry)) end
  if not c.fams_text then
    for _, p in ipairs(keys.members) do redis.pcall('ZREM', p .. ':' .. c.tag .. c.uid, c.sid) end
  end
end

-- own_keys lists the session's own keys: the record, every family it has
-- and Cognee's lists (which another program may have made); every
-- registered family for a session without fams (one only Cognee wrote,
-- whose reads may have built an index).
local function own_keys(c)
  local out = { c.record }
  if c.fams_text then
    local seen = {}
    for code in pairs(fams_set(c)) do seen[keys.prefix[code]] = true end
    for _, p in ipairs(keys.cognee) do seen[p] = true end
    for p in pairs(seen) do out[#out + 1] = key(c, p) end
  else
    for _, p in ipairs(keys.session) do out[#out + 1] = key(c, p) end
  end
  return out
end

-- forget_marks removes the session's fields of the user's marker.
local function forget_marks(c)
  local fs = {}
  for _, f in ipairs(keys.marker.session) do fs[#fs + 1] = f .. ':' .. c.sid end
  if #fs > 0 then redis.call('HDEL', c.marker, unpack(fs)) end
end

return {
  STATUSES = STATUSES,
  IS_STATUS = IS_STATUS,
  key = key,
  user_set = user_set,
  global_set = global_set,
  expiry = expiry,
  fams_set = fams_set,
  had = had,
  idx = idx,
  index_in = index_in,
  member_of = member_of,
  index_out = index_out,
  keep = keep,
  user_made = user_made,
  forget = forget,
  grain = grain,
  bookkeeping = bookkeeping,
  index_new = index_new,
  slide_user = slide_user,
  slide = slide,
  list_keys = list_keys,
  unindex = unindex,
  own_keys = own_keys,
  forget_marks = forget_marks,
}
