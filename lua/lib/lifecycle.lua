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
-- user's sessions (lib/marker.lua).
--- @include keys
--- @include clock
--- @include guard
--- @include marker
--- @include families

local STATUSES = { 'running', 'completed', 'failed' }
local IS_STATUS = { running = true, completed = true, failed = true }
-- PRUNE: members of an activity index examined per bookkeeping (prune)
local PRUNE = 2

-- user_set and global_set are the lifecycle index of a status: the user's
-- (members session ids) and the bucket's (members "<u>:<s>").
local function user_set(c, status) return 'agent_sessions_by_user:' .. c.tag .. c.uid .. ':' .. status end
local function global_set(c, status) return 'agent_sessions_global:' .. c.tag .. status end
local function expiry(c) return 'agent_sessions_global:' .. c.tag .. 'expiry' end

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
-- bookkeeping moves its score, a delete removes it. Before commit. finish
-- gives k its TTL (expire_new; one EXISTS here tells a key the write makes).
local function index_in(c, k, per_user)
  local entry = (per_user and 's' or 'g') .. k
  if listed(c, entry) then
    c.idx_new = c.idx_new or {}
    c.idx_new[entry] = true
    if redis.call('EXISTS', k) == 0 then
      c.idx_fresh = c.idx_fresh or {}
      c.idx_fresh[k] = true
    end
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
    undo[1] = { 'ZADD', ex, expiry_score(c.slid_at, c.old_ttl or t), c.gid }
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

-- expire_new gives the activity indexes this write filed the session in
-- (index_in) their TTL t: one the write made gets t (slide_user's EXPIRE
-- GT gives none to a key without one); another, when no bookkeeping was
-- due (no slide_user), at least t (0: none).
local function expire_new(c, t)
  if not c.idx_new then return end
  for entry in pairs(c.idx_new) do
    local k = string.sub(entry, 2)
    if c.idx_fresh and c.idx_fresh[k] then
      if t > 0 then redis.call('EXPIRE', k, t) end
    elseif not c.due then
      if t > 0 then redis.call('EXPIRE', k, t, 'GT') else redis.call('PERSIST', k) end
    end
  end
end

-- slide_user gives the user's keys this session keeps alive at least TTL
-- t (0: none): its activity and member sets, the keys the marker lists,
-- and the marker.
local function slide_user(c, t)
  local user = {}
  for _, entry in ipairs(idx(c)) do user[#user + 1] = string.sub(entry, 2) end
  if c.ukeys_text or c.ukeys then
    for _, k in ipairs(marker.ukeys(c)) do user[#user + 1] = k end
    user[#user + 1] = c.marker
  end
  for _, k in ipairs(user) do
    if t > 0 then redis.call('EXPIRE', k, t, 'GT') else redis.call('PERSIST', k) end
  end
end

-- unpersist gives the user's keys slide_user slides that have no TTL
-- (the last session of the user without expiry held them) TTL t: the
-- user's own sets, the kept keys and the marker. A bucket's set ('g',
-- 'G': other users' sessions, perhaps without expiry, are members too)
-- keeps none: the sweep, the prunes and the listings remove its members of
-- sessions gone.
-- The user's sets of a session without expiry that got one or went
-- while another such session of the user remained are listed in the
-- marker's field unpersist (JSON) until the last one's unpersist.
local function user_sets(c)
  local out = {}
  for _, entry in ipairs(idx(c)) do
    local kind = string.sub(entry, 1, 1)
    if kind == 's' or kind == 'S' then out[#out + 1] = string.sub(entry, 2) end
  end
  return out
end

local function deferred(c)
  local text = redis.call('HGET', c.marker, 'unpersist')
  local ok, list = pcall(cjson.decode, text or '[]')
  local out = {}
  for _, k in ipairs(ok and type(list) == 'table' and list or {}) do
    if type(k) == 'string' then out[#out + 1] = k end
  end
  return out, text
end

local function unpersist(c, t)
  local user = user_sets(c)
  local later, text = deferred(c)
  for _, k in ipairs(later) do user[#user + 1] = k end
  if text then redis.call('HDEL', c.marker, 'unpersist') end
  for _, k in ipairs(marker.ukeys(c)) do user[#user + 1] = k end
  user[#user + 1] = c.marker
  for _, k in ipairs(user) do redis.call('EXPIRE', k, t, 'NX') end
end

-- defer_unpersist lists the user's sets of session c, which its slides
-- left without expiry, for the unpersist of the user's last session
-- without expiry (another remains: a set may be one it holds too).
local function defer_unpersist(c)
  local sets = user_sets(c)
  if #sets == 0 or c.default_ttl <= 0 then return end
  local list = deferred(c)
  local have, changed = {}, false
  for _, k in ipairs(list) do have[k] = true end
  for _, k in ipairs(sets) do
    if not have[k] then list[#list + 1], have[k], changed = k, true, true end
  end
  if changed then redis.call('HSET', c.marker, 'unpersist', cjson.encode(list)) end
end

-- slide gives the record and every key of the families the session has
-- TTL t (0: none), and the user's keys at least t. The loose keys the
-- record does not list (Cognee's lists, an index a read made) slide too,
-- when one EXISTS finds any. A code of set this sidecar does not know
-- (another version's family) is left to that version's slides.
local function slide(c, t, set)
  local cmd = t > 0 and 'EXPIRE' or 'PERSIST'
  local function one(k)
    if t > 0 then redis.call(cmd, k, t) else redis.call(cmd, k) end
  end
  one(c.record)
  for code in pairs(set) do
    local p = keys.prefix[code]
    if p then one(families.key(c, p)) end
  end
  local loose = families.loose_keys(c, set)
  if #loose > 0 and redis.call('EXISTS', unpack(loose)) > 0 then
    for _, k in ipairs(loose) do one(k) end
  end
  slide_user(c, t)
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

return {
  STATUSES = STATUSES,
  IS_STATUS = IS_STATUS,
  user_set = user_set,
  global_set = global_set,
  expiry = expiry,
  idx = idx,
  index_in = index_in,
  member_of = member_of,
  index_out = index_out,
  grain = grain,
  bookkeeping = bookkeeping,
  index_new = index_new,
  expire_new = expire_new,
  slide_user = slide_user,
  unpersist = unpersist,
  defer_unpersist = defer_unpersist,
  slide = slide,
  unindex = unindex,
}
