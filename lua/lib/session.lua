-- session: the core of every session write. It knows the session record,
-- the user's marker, the lifecycle indexes and the families a session has;
-- it names no module's key. A module's keys reach it through the families
-- the module registers in Go (the generated keys library) and what its
-- scripts declare: session.use (a family this write writes),
-- session.keep (a user key that lives as long as the user's sessions),
-- session.index_in (an activity index that holds this session).
--
-- The per-call contract (sessionstore.Store.Run builds it):
--   KEYS[1]   the record, agent_session_record:<tag><u>:<s>; the script's
--             own keys may follow
--   ARGV[1]   the core's settings, "<ttl> <grain> <maxlen> <mode>": ttl
--             SESSION_TTL_SECONDS (0: no expiry), grain the longest the
--             bookkeeping may wait (µs, see commit), maxlen
--             SESSION_EVENTS_MAXLEN, mode 'w' (SESSION_EVENTS=watched) or 'a'
--   ARGV[2..] the script's own
-- <tag> is '' on standalone Redis and '{b<N>}:' on Cluster, where every key
-- a script derives (the session's, its user's, the bucket's shard of the
-- lifecycle indexes) carries it and so lies in the record's slot.
--
-- A write runs in four steps, all checks before the first write:
--   local c = session.open(KEYS, ARGV)        -- no command
--   session.begin(c, fields)  reads the record (its core fields and the
--                             script's) and the user's marker: 2 commands
--   ... the script's own reads and checks; session.use for each family it
--       writes (a family the session does not have yet is checked here)
--   session.commit(c)         the first writes: the bookkeeping when due
--   ... the script's writes
--   session.finish(c, fields) the record (one HSET) and TTLs
-- and answers return session.reply(c, answer) (a pending abort rides on
-- the answer's tag: lua.Decode).
--
-- The record (a hash) holds the core's fields: status (running, completed,
-- failed; 'abandoned' is a score range of the running set), started_at,
-- last_activity_at, slid_at (the last bookkeeping, µs), ttl_seconds (the
-- session's own TTL), fams (the codes of the session families it has,
-- " e q "), idx (the activity indexes beyond the status sets, JSON) and
-- abort_requested_at; and the modules' own fields.
--
-- The user's marker, agent_user_marker:<tag><sha1(u)> (a hash named by the
-- user's SHA1, so that it may outlive an erasure without naming the user),
-- is read by every write in the same command: fence (when set, "<code>
-- <text>": every write of the user is refused with it), keys (JSON: the
-- user's keys that live as long as the user's sessions) and the fields the
-- modules register (keys.marker: per user, or per session as
-- "<field>:<s>").
--- @include keys
--- @include clock
--- @include guard
--- @include reply

local STATUSES = { 'running', 'completed', 'failed' }
local IS_STATUS = { running = true, completed = true, failed = true }
local RECORD = 'agent_session_record:'
local MARKER = 'agent_user_marker:'
-- the core's record fields, in begin's HMGET order
local CORE = { 'status', 'ttl_seconds', 'slid_at', 'fams', 'idx', 'abort_requested_at' }
-- SLIDE_MAX bounds the grain by the TTL: a slide at most every TTL/1000
local SLIDE_SHARE = 1000
-- PRUNE: members of an activity index examined per bookkeeping (see prune)
local PRUNE = 2

-- the context's keys made when first asked
local CTX = {}
CTX.__index = function(c, name)
  local v
  if name == 'marker' then
    v = MARKER .. c.tag .. redis.sha1hex(c.uid)
  elseif name == 'expiry' then
    v = 'agent_sessions_global:' .. c.tag .. 'expiry'
  else
    return nil
  end
  rawset(c, name, v)
  return v
end

-- user_set and global_set are the lifecycle index of a status: the user's
-- (members session ids) and the bucket's (members "<u>:<s>").
local function user_set(c, status) return 'agent_sessions_by_user:' .. c.tag .. c.uid .. ':' .. status end
local function global_set(c, status) return 'agent_sessions_global:' .. c.tag .. status end

local function context(tag, uid, sid, settings)
  return setmetatable({
    tag = tag, uid = uid, sid = sid, gid = uid .. ':' .. sid,
    record = RECORD .. tag .. uid .. ':' .. sid,
    default_ttl = settings.ttl, grain = settings.grain, events_maxlen = settings.maxlen,
    events_watched = settings.watched, settings = settings,
    rec = {}, marks = {}, added = {}, checks = {},
  }, CTX)
end

-- open is the context of this call's session (see the header).
local function open(KEYS, ARGV)
  if redis.replicate_commands then redis.replicate_commands() end
  local rest = string.sub(KEYS[1], #RECORD + 1)
  local tag = string.match(rest, '^{[^}]*}:') or ''
  local uid, sid = string.match(string.sub(rest, #tag + 1), '^([^:]*):(.*)$')
  local ttl, grain, maxlen, mode = string.match(ARGV[1], '^(%d+) (%d+) (%d+) (%a)$')
  return context(tag, uid, sid, { ttl = tonumber(ttl), grain = tonumber(grain), maxlen = tonumber(maxlen),
    watched = mode == 'w' })
end

-- at is the context of session sid of c's user (fork, split,
-- start-or-reuse): the same settings, tag and marker.
local function at(c, sid)
  local o = context(c.tag, c.uid, sid, c.settings)
  o.now = rawget(c, 'now')
  return o
end

-- key is the session's key of family prefix: <prefix>:<tag><u>:<s>.
local function key(c, prefix)
  return prefix .. ':' .. c.tag .. c.gid
end

-- user_key is the user's key of family prefix: <prefix>:<tag><u>, then
-- ':' .. suffix when given.
local function user_key(c, prefix, suffix)
  local k = prefix .. ':' .. c.tag .. c.uid
  if suffix then k = k .. ':' .. suffix end
  return k
end

-- bucket_key is the bucket's key of family prefix: <prefix>:<tag><suffix>,
-- or <prefix> (<prefix>:{b<N>} on Cluster) without a suffix.
local function bucket_key(c, prefix, suffix)
  if suffix then return prefix .. ':' .. c.tag .. suffix end
  if c.tag == '' then return prefix end
  return prefix .. ':' .. string.sub(c.tag, 1, -2)
end

-- now is Redis's clock (µs), read once a call.
local function now(c)
  local t = rawget(c, 'now')
  if not t then
    t = clock.now_us()
    rawset(c, 'now', t)
  end
  return t
end

-- ttl is the TTL the session slides to: its own, else SESSION_TTL_SECONDS
-- (0 = no expiry).
local function ttl(c)
  return c.own_ttl or c.default_ttl
end

-- fams_of parses the record's fams into a set of codes.
local function fams_of(text)
  local set = {}
  for code in string.gmatch(text or '', '%S+') do set[code] = true end
  return set
end

-- begin reads the user's marker (fence, keys and the registered fields,
-- into c.marks) and the record (the core's fields, then fields, the
-- script's own, into c.rec by name), and returns the refusal of a write
-- that must not happen: the user is fenced, the marker or the record holds
-- another type, or a core field is not what the core keeps there
-- (c.refused_by says which: 'fence', 'marker' or 'record'). nil when the
-- write may go on. c.status is the stored status (nil: not started).
local function begin(c, fields)
  local mf = { 'fence', 'keys' }
  for _, f in ipairs(keys.marker.user) do mf[#mf + 1] = f end
  for _, f in ipairs(keys.marker.session) do mf[#mf + 1] = f .. ':' .. c.sid end
  local m = redis.pcall('HMGET', c.marker, unpack(mf))
  if m.err then
    c.refused_by = 'marker'
    return guard.from_error(c.marker, 'hash', m)
  end
  if m[1] then
    c.refused_by = 'fence'
    local code, text = string.match(m[1], '^(%S+) (.*)$')
    return reply.refused(code or 'user_fenced', text or m[1])
  end
  c.ukeys_text = m[2] or nil
  local i = 3
  for _, f in ipairs(keys.marker.user) do
    c.marks[f], i = m[i] or nil, i + 1
  end
  for _, f in ipairs(keys.marker.session) do
    c.marks[f], i = m[i] or nil, i + 1
  end
  local want = { unpack(CORE) }
  for _, f in ipairs(fields or {}) do want[#want + 1] = f end
  c.refused_by = 'record'
  local r = redis.pcall('HMGET', c.record, unpack(want))
  if r.err then return guard.from_error(c.record, 'hash', r) end
  -- a missing field is false in Lua: nil from here on
  for j = 1, #want do
    if not r[j] then r[j] = nil end
  end
  local status, own, slid = r[1], r[2], r[3]
  if status and not IS_STATUS[status] then return guard.bad_field(c.record, 'status', 'a status') end
  if own and not string.match(own, '^%d+$') then return guard.bad_field(c.record, 'ttl_seconds', 'an integer') end
  if slid and not string.match(slid, '^%d+$') then return guard.bad_field(c.record, 'slid_at', 'an integer') end
  c.refused_by = nil
  c.status, c.own_ttl, c.slid_at = status, tonumber(own), tonumber(slid)
  c.fams_text, c.idx_text, c.abort = r[4], r[5], r[6]
  c.fams = fams_of(r[4])
  c.recorded = status ~= nil or own ~= nil or slid ~= nil or r[4] ~= nil
  for j, f in ipairs(fields or {}) do
    local v = r[#CORE + j]
    c.rec[f] = v or nil
    if v then c.recorded = true end
  end
  return nil
end

-- has reports whether the session has family prefix (fams, or added by
-- this write).
local function has(c, prefix)
  local code = keys.code[prefix]
  return c.fams[code] ~= nil or c.added[code] ~= nil
end

-- use declares that this write writes the session's key of family prefix
-- (a Redis type kind) and returns it. A family the session does not have
-- yet is added to fams by finish, gets its TTL there, and has its key's
-- type checked by commit, before the first write, unless read_first: the
-- script reads it first with a command that refuses another type (a
-- pcall: guard.from_error).
local function use(c, prefix, kind, read_first)
  local code = keys.code[prefix]
  if not code then error('session.use: ' .. prefix .. ' is no registered session family') end
  local k = key(c, prefix)
  if not c.fams[code] and c.added[code] == nil then
    c.added[code] = k
    if not read_first then c.checks[#c.checks + 1] = { k, kind } end
  end
  return k
end

-- drop notes that this write removed the session's key of family prefix
-- (emptied or unlinked it): finish takes it out of fams, so no slide
-- touches it, and the write that makes it again (session.use, before or
-- after commit: a key just removed needs no type check) gives it its TTL.
local function drop(c, prefix)
  local code = keys.code[prefix]
  c.fams[code], c.added[code] = nil, nil
  c.fams_changed = true
end

-- made notes that this write made the key of family prefix anew although
-- the session had the family (another program had removed the key: an
-- RPUSH that answered 1): finish gives it its TTL.
local function made(c, prefix)
  if not c.fams[keys.code[prefix]] then return end
  c.made = c.made or {}
  c.made[#c.made + 1] = key(c, prefix)
end

-- keep declares a user key (of a user family that lives as long as the
-- user's sessions, holding Redis type kind) this write writes, before
-- commit (which checks its type when the marker does not list it yet): the marker lists it, and every slide
-- of every session of the user gives it at least the session's TTL
-- (EXPIRE GT: a key without expiry, which a session without expiry holds,
-- keeps none). A key the marker does not list yet gets the TTL in finish
-- (EXPIRE NX, then GT).
local function keep(c, k, kind)
  if not c.ukeys then c.ukeys = c.ukeys_text and cjson.decode(c.ukeys_text) or {} end
  for _, have in ipairs(c.ukeys) do
    if have == k then return k end
  end
  if kind then c.checks[#c.checks + 1] = { k, kind } end
  c.ukeys[#c.ukeys + 1] = k
  c.ukeys_new = c.ukeys_new or {}
  c.ukeys_new[#c.ukeys_new + 1] = k
  c.ukeys_changed = true
  return k
end

-- user_made notes that this write makes user key k anew although the
-- marker lists it (another program removed it): finish gives it its TTL.
local function user_made(c, k)
  c.user_made = c.user_made or {}
  c.user_made[#c.user_made + 1] = k
end

-- forget takes user key k off the marker's list (the write removed it).
local function forget(c, k)
  if not c.ukeys then c.ukeys = c.ukeys_text and cjson.decode(c.ukeys_text) or {} end
  for i, have in ipairs(c.ukeys) do
    if have == k then
      table.remove(c.ukeys, i)
      c.ukeys_changed = true
      return
    end
  end
end

-- idx is the session's activity indexes beyond the status sets: a list of
-- "<member kind><key>", kind 's' (members session ids: a user's index) or
-- 'g' (members "<u>:<s>": the bucket's); 'S' and 'G' for sorted sets that
-- hold the session without its activity score (session.member_of): a
-- delete takes it out of all of them, the bookkeeping scores the first.
local function idx(c)
  if not c.idx then c.idx = c.idx_text and cjson.decode(c.idx_text) or {} end
  return c.idx
end

local function member(c, entry)
  local kind = string.sub(entry, 1, 1)
  if kind == 's' or kind == 'S' then return c.sid end
  return c.gid
end

-- scored reports whether idx entry is an activity index.
local function scored(entry)
  local kind = string.sub(entry, 1, 1)
  return kind == 's' or kind == 'g'
end

-- index_in files the session in activity index k (a sorted set scored by
-- last activity; per_user: members session ids, else "<u>:<s>"): commit
-- adds it (a guarded first write), every later bookkeeping moves its score,
-- a delete removes it. Call it before commit.
local function index_in(c, k, per_user)
  local entry = (per_user and 's' or 'g') .. k
  for _, have in ipairs(idx(c)) do
    if have == entry then return end
  end
  local list = idx(c)
  list[#list + 1] = entry
  c.idx_new = c.idx_new or {}
  c.idx_new[entry] = true
  c.idx_changed = true
end

-- member_of notes that sorted set k holds the session (per_user: as its
-- session id, else "<u>:<s>") under a score of its owner's: a delete takes
-- it out. The caller writes it.
local function member_of(c, k, per_user)
  local entry = (per_user and 'S' or 'G') .. k
  for _, have in ipairs(idx(c)) do
    if have == entry then return end
  end
  local list = idx(c)
  list[#list + 1] = entry
  c.idx_changed = true
end

-- index_out takes the session out of activity index k (ZREM) and off the
-- record's list; after commit.
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
-- setting's (min(60 s, SESSION_ABANDON_AFTER_SECONDS / 30)), and at most
-- t/1000, so a TTL is never short by more than a thousandth.
local function grain(c, t)
  if t > 0 then return math.min(c.grain, math.floor(t * 1000000 / SLIDE_SHARE)) end
  return c.grain
end

-- expiry_score is the expiry set's score of a session slid at time at
-- with TTL t.
local function expiry_score(at_us, t)
  if t > 0 then return string.format('%d', at_us + t * 1000000) end
  return '+inf'
end

-- zadd runs ZADD key score m as a guarded first write: it records in undo
-- how to take it back (the member new: ZREM; else its old score), and
-- answers the refusal when key holds another type.
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
-- active members whose session expired (no entry in the expiry set, or an
-- expiry before now): members of expired sessions leave an index that is
-- written but seldom read as fast as sessions join it.
local function prune(c, k, per_user, t_now)
  local prefix = per_user and (c.uid .. ':') or ''
  local ms = redis.call('ZRANGE', k, 0, PRUNE - 1)
  for _, m in ipairs(ms) do
    local exp = redis.call('ZSCORE', c.expiry, prefix .. m)
    if not exp or (tonumber(exp) or math.huge) < t_now then redis.call('ZREM', k, m) end
  end
end

-- bookkeeping writes the lifecycle and activity indexes (see commit) as
-- guarded first writes, taking back those made when one refuses.
local function bookkeeping(c, status, t)
  local t_now, n = c.now, string.format('%d', c.now)
  local undo = {}
  local old = c.slid_at and string.format('%d', c.slid_at)
  local refused
  -- the expiry set first: it is the one whose old score is not the last
  -- bookkeeping's time; a refusal later takes it back from that time
  local fresh = redis.pcall('ZADD', c.expiry, expiry_score(t_now, t), c.gid)
  if type(fresh) == 'table' then return guard.from_error(c.expiry, 'zset', fresh) end
  if fresh == 1 then
    undo[1] = { 'ZREM', c.expiry, c.gid }
  elseif c.slid_at then
    undo[1] = { 'ZADD', c.expiry, expiry_score(c.slid_at, t), c.gid }
  end
  local moved = c.status and c.status ~= status
  refused = zadd(undo, user_set(c, status), n, c.sid, not moved and old or nil)
    or zadd(undo, global_set(c, status), n, c.gid, not moved and old or nil)
  if not refused and moved then
    refused = zrem(undo, user_set(c, c.status), c.sid, old) or zrem(undo, global_set(c, c.status), c.gid, old)
  end
  if not refused and not c.status and fresh == 0 then
    -- a new session whose id an expired one held before the sweep ran:
    -- it leaves the sets of the other statuses
    for _, st in ipairs(STATUSES) do
      if not refused and st ~= status then
        refused = zrem(undo, user_set(c, st), c.sid) or zrem(undo, global_set(c, st), c.gid)
      end
    end
  end
  if not refused then
    for _, entry in ipairs(idx(c)) do
      local o = old
      if c.idx_new and c.idx_new[entry] then o = nil end
      if scored(entry) then refused = refused or zadd(undo, string.sub(entry, 2), n, member(c, entry), o) end
    end
  end
  if refused then
    for i = #undo, 1, -1 do redis.call(unpack(undo[i])) end
    return refused
  end
  for _, entry in ipairs(idx(c)) do
    if scored(entry) then prune(c, string.sub(entry, 2), string.sub(entry, 1, 1) == 's', t_now) end
  end
  return nil
end

-- cognee_first reads, for a write that starts the session, the first
-- element of Cognee's entries list, which finish needs (cognee_start)
-- after the write's writes: as a pcall before the first write, so that a
-- list of another type is refused with nothing written. A write that
-- reads or checks the list itself (session.use of its family) reads it in
-- finish as before.
local function cognee_first(c)
  local code = keys.code[keys.cognee_entries]
  if c.fams[code] or c.added[code] ~= nil then return nil end
  local k = key(c, keys.cognee_entries)
  local first = redis.pcall('LINDEX', k, 0)
  if type(first) == 'table' and first.err then return guard.from_error(k, 'list', first) end
  c.cognee_first = first or false
  return nil
end

-- commit makes the write's first writes, once every check of the script
-- passed: it checks the keys of the families this write makes (session.use
-- without read_first: one EXISTS, a TYPE each only when one exists), then,
-- when due, the bookkeeping: the session's score in the status sets of
-- its user and bucket, in the expiry set and in its activity indexes
-- (session.index_in). It is due when the session starts, changes status
-- (opts.status), changes TTL (opts.force), or the last was at least the
-- grain ago; so list order, 'abandoned' and the expiry set are exact to the
-- grain. Returns the refusal (nothing written), or nil.
local function commit(c, opts)
  opts = opts or {}
  c.quiet = opts.quiet
  if not c.quiet and not c.status then
    local refused = cognee_first(c)
    if refused then return refused end
  end
  if #c.checks > 0 then
    local ks = {}
    for i, p in ipairs(c.checks) do ks[i] = p[1] end
    if redis.call('EXISTS', unpack(ks)) > 0 then
      local refused = guard.check(c.checks)
      if refused then return refused end
    end
  end
  c.committed = true
  if c.quiet then return nil end
  local t_now = now(c)
  local t = ttl(c)
  c.to_status = opts.status or c.status or 'running'
  c.due = not c.status or c.to_status ~= c.status or opts.force or not c.slid_at
    or t_now - c.slid_at >= grain(c, t)
  c.committed = true
  if c.due then return bookkeeping(c, c.to_status, t) end
  if c.idx_new then
    -- indexes this write files the session in, at its last bookkeeping's
    -- score
    local undo, score = {}, string.format('%d', c.slid_at)
    for entry in pairs(c.idx_new) do
      local refused = zadd(undo, string.sub(entry, 2), score, member(c, entry))
      if refused then
        for i = #undo, 1, -1 do redis.call(unpack(undo[i])) end
        return refused
      end
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
    if not c.ukeys then c.ukeys = cjson.decode(c.ukeys_text) end
    for _, k in ipairs(c.ukeys) do user[#user + 1] = k end
    user[#user + 1] = c.marker
  end
  for _, k in ipairs(user) do
    if t > 0 then redis.call('EXPIRE', k, t, 'GT') else redis.call('PERSIST', k) end
  end
end

-- slide gives every key of the session its TTL t (0: none), and the user's
-- keys at least t.
local function slide(c, t)
  local function each(f)
    f(c.record)
    for code in pairs(c.fams) do f(key(c, keys.prefix[code])) end
    for _, k in pairs(c.added) do f(k) end
  end
  if t > 0 then
    each(function(k) redis.call('EXPIRE', k, t) end)
  else
    each(function(k) redis.call('PERSIST', k) end)
  end
  slide_user(c, t)
end

-- list_keys writes the marker's list of the user's keys when this write
-- changed it: the keys it lists anew, and the marker, hold at least TTL t
-- from now on (EXPIRE NX, then GT).
local function list_keys(c, t)
  if c.user_made and t > 0 then
    for _, k in ipairs(c.user_made) do
      redis.call('EXPIRE', k, t, 'NX')
      redis.call('EXPIRE', k, t, 'GT')
    end
  end
  if not c.ukeys_changed then return end
  redis.call('HSET', c.marker, 'keys', cjson.encode(c.ukeys))
  local new = c.ukeys_new or {}
  new[#new + 1] = c.marker
  for _, k in ipairs(new) do
    if t > 0 then
      redis.call('EXPIRE', k, t, 'NX')
      redis.call('EXPIRE', k, t, 'GT')
    end
  end
end

-- finish_user ends a user's write that writes no session (search_mark, the
-- user's blocks and state): the keys it keeps (session.keep) get the
-- default TTL's lifetime. It checks the types commit would, first.
local function check_user(c)
  if #c.checks == 0 then return nil end
  return guard.check(c.checks)
end

local function finish_user(c)
  list_keys(c, c.default_ttl)
end

-- encode_fams is the fams text of set (codes), sorted.
local function encode_fams(set)
  local list = {}
  for code in pairs(set) do list[#list + 1] = code end
  table.sort(list)
  if #list == 0 then return '' end
  return ' ' .. table.concat(list, ' ') .. ' '
end

-- cognee_start is a new record's started_at (µs text) for a session whose
-- entries list another writer (Cognee) began: its first entry's time when
-- that is before now, else nil. One LINDEX, at a session's start.
local function cognee_start(c)
  local first = c.cognee_first
  if first == nil then first = redis.call('LINDEX', key(c, keys.cognee_entries), 0) end
  local t = first and clock.entry_time_us(first)
  if t and t < c.now then return string.format('%d', t) end
  return nil
end

-- finish_quiet ends a quiet write (commit's opts.quiet): the record, when
-- there is one, lists the families the write made and its member sets,
-- and those keys get the session's TTL; a session only Cognee wrote (no
-- record) has them expire with its entries list (with the session's TTL
-- while the list has none).
local function finish_quiet(c)
  local t = ttl(c)
  if c.recorded then
    local hs = {}
    if next(c.added) ~= nil or c.fams_changed then
      local set = {}
      for code in pairs(c.fams) do set[code] = true end
      for code in pairs(c.added) do set[code] = true end
      hs[#hs + 1], hs[#hs + 2] = 'fams', encode_fams(set)
    end
    if c.idx_changed then hs[#hs + 1], hs[#hs + 2] = 'idx', cjson.encode(c.idx) end
    if #hs > 0 then redis.call('HSET', c.record, unpack(hs)) end
    if t > 0 then
      for _, k in pairs(c.added) do redis.call('EXPIRE', k, t) end
      for _, k in ipairs(c.made or {}) do redis.call('EXPIRE', k, t) end
    end
    if next(c.added) ~= nil then slide_user(c, t) end
  else
    local p = redis.call('PTTL', key(c, keys.cognee_entries))
    for _, k in pairs(c.added) do
      if p > 0 then
        redis.call('PEXPIRE', k, p)
      elseif t > 0 then
        redis.call('EXPIRE', k, t)
      end
    end
  end
  list_keys(c, t)
  return false
end

-- finish ends a committed write: one HSET of the record (last activity,
-- the fields of a start or a status change, the bookkeeping's time, fams,
-- idx, then fields: the script's own "name, value, ..."), and the TTLs:
-- every key of the session when the bookkeeping was due, else only those
-- this write made. Returns whether this write started the session.
-- opts.started_at: a new record's started_at (µs text); when absent, the
-- time of the first entry of a session Cognee began (cognee_start), else
-- now.
local function finish(c, fields, opts)
  opts = opts or {}
  if not c.committed then error('session.finish before session.commit') end
  if c.quiet then return finish_quiet(c) end
  local n = string.format('%d', c.now)
  local hs = { 'last_activity_at', n }
  local started = not c.status
  if started or c.to_status ~= c.status then
    hs[#hs + 1], hs[#hs + 2] = 'status', c.to_status
  end
  if started then hs[#hs + 1], hs[#hs + 2] = 'started_at', opts.started_at or cognee_start(c) or n end
  if c.due then hs[#hs + 1], hs[#hs + 2] = 'slid_at', n end
  if next(c.added) ~= nil or c.fams_changed then
    local set = {}
    for code in pairs(c.fams) do set[code] = true end
    for code in pairs(c.added) do set[code] = true end
    hs[#hs + 1], hs[#hs + 2] = 'fams', encode_fams(set)
  end
  if c.idx_changed then hs[#hs + 1], hs[#hs + 2] = 'idx', cjson.encode(c.idx) end
  for _, v in ipairs(fields or {}) do hs[#hs + 1] = v end
  redis.call('HSET', c.record, unpack(hs))
  local t = ttl(c)
  list_keys(c, t)
  if c.due then
    slide(c, t)
  elseif t > 0 then
    for _, k in pairs(c.added) do redis.call('EXPIRE', k, t) end
    for _, k in ipairs(c.made or {}) do redis.call('EXPIRE', k, t) end
    -- the user's keys outlive a key the session made that depends on them
    -- (its search documents on the marker), as they outlive its others
    if next(c.added) ~= nil then slide_user(c, t) end
  end
  return started
end

-- reply is answer r of the write, with the session's pending abort on its
-- tag ('ok@<µs>'), for the Sidecar-Abort-Requested header (lua.Decode).
local function session_reply(c, r)
  if c.abort and (r[1] == 'ok' or r[1] == 'dup') then r[1] = r[1] .. '@' .. c.abort end
  return r
end

-- clear_abort removes a pending abort request (a status change, the next
-- user message) in finish's HSET's stead; returns whether one was set.
local function clear_abort(c)
  if not c.abort then return false end
  redis.call('HDEL', c.record, 'abort_requested_at')
  c.abort = nil
  return true
end

-- cognee_keys are the session's keys of Cognee's families (its lists),
-- which Cognee writes too.
local function cognee_keys(c)
  local out = {}
  for i, p in ipairs(keys.cognee) do out[i] = key(c, p) end
  return out
end

-- exists reports whether the session exists: its record, or a list of
-- Cognee's (a session only Cognee wrote).
local function exists(c)
  if c.recorded then return true end
  return redis.call('EXISTS', unpack(cognee_keys(c))) > 0
end

-- own_keys lists the session's own keys: the record, every family it has
-- (and Cognee's lists, which another program may have made); every
-- registered family for a session without fams (one only Cognee wrote,
-- whose reads may have built an index).
local function own_keys(c)
  local out = { c.record }
  if c.fams_text then
    local seen = {}
    for code in pairs(c.fams) do seen[keys.prefix[code]] = true end
    for _, p in ipairs(keys.cognee) do seen[p] = true end
    for p in pairs(seen) do out[#out + 1] = key(c, p) end
  else
    for _, p in ipairs(keys.session) do out[#out + 1] = key(c, p) end
  end
  return out
end

-- unindex takes the session out of its status sets, the expiry set and
-- its activity indexes (a delete or an erasure).
local function unindex(c)
  local statuses = c.status and { c.status } or STATUSES
  for _, st in ipairs(statuses) do
    redis.call('ZREM', user_set(c, st), c.sid)
    redis.call('ZREM', global_set(c, st), c.gid)
  end
  redis.call('ZREM', c.expiry, c.gid)
  for _, entry in ipairs(idx(c)) do redis.call('ZREM', string.sub(entry, 2), member(c, entry)) end
  if not c.fams_text then
    -- a session without a record's lists (one only Cognee wrote, whose
    -- search may have indexed it): the user's sets of sessions registered
    for _, p in ipairs(keys.members) do redis.pcall('ZREM', user_key(c, p), c.sid) end
  end
end

-- forget_marks removes the session's fields of the user's marker.
local function forget_marks(c)
  local fs = {}
  for _, f in ipairs(keys.marker.session) do fs[#fs + 1] = f .. ':' .. c.sid end
  if #fs > 0 then redis.call('HDEL', c.marker, unpack(fs)) end
end

-- set_ttl gives the session its own TTL t (0: none) at once: the record's
-- ttl_seconds, every key it has, and Cognee's lists whatever wrote them.
local function set_ttl(c, t)
  c.own_ttl = t
  for _, p in ipairs(keys.cognee) do
    local code = keys.code[p]
    if not c.fams[code] then
      local k = key(c, p)
      if redis.call('EXISTS', k) == 1 then c.added[code] = k end
    end
  end
end

return {
  STATUSES = STATUSES,
  IS_STATUS = IS_STATUS,
  TOMBSTONE = '\0sidecar:deleted',
  open = open,
  at = at,
  key = key,
  user_key = user_key,
  bucket_key = bucket_key,
  user_set = user_set,
  global_set = global_set,
  now = now,
  ttl = ttl,
  begin = begin,
  has = has,
  use = use,
  drop = drop,
  made = made,
  keep = keep,
  user_made = user_made,
  forget = forget,
  index_in = index_in,
  member_of = member_of,
  index_out = index_out,
  commit = commit,
  finish = finish,
  check_user = check_user,
  finish_user = finish_user,
  reply = session_reply,
  clear_abort = clear_abort,
  cognee_keys = cognee_keys,
  exists = exists,
  own_keys = own_keys,
  unindex = unindex,
  forget_marks = forget_marks,
  set_ttl = set_ttl,
}
