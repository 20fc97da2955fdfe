-- session: the core of every session write. It knows the session record,
-- the user's marker and the families a session has (its bookkeeping:
-- lib/lifecycle.lua); it names no module's key. A module's keys reach it
-- through the families the module registers in Go (the generated keys
-- library) and what its scripts declare: session.use (a family this write
-- writes), session.keep (a user key that lives as long as the user's
-- sessions), session.index_in (an activity index that holds the session).
--
-- The per-call contract (sessionstore.Store.Run builds it):
--   KEYS[1]   the record, agent_session_record:<tag><u>:<s>
--   KEYS[2]   the user's marker, agent_user_marker:<tag><sha1(u)> (when
--             absent, derived here)
--   ARGV[1]   the core's settings, "<ttl> <grain> <maxlen> <mode>": ttl
--             SESSION_TTL_SECONDS (0: no expiry), grain the longest the
--             bookkeeping may wait (µs, see commit), maxlen
--             SESSION_EVENTS_MAXLEN, mode 'w' (SESSION_EVENTS=watched) or 'a'
--   ARGV[2..] the script's own
-- <tag> is '' on standalone Redis and '{b<N>}:' on Cluster, where every key
-- a script derives (the session's, its user's, the bucket's shard of the
-- lifecycle indexes) carries it and so lies in the record's slot.
--
-- A write runs in four steps, every check before the first write:
--   local c = session.open(KEYS, ARGV)        -- no command
--   session.begin(c, fields)  reads the marker and the record (its core
--                             fields and the script's): 2 commands
--   ... the script's own reads and checks; session.use for each family it
--       writes (one the session does not have yet is checked by commit)
--   session.commit(c)         the first writes: the bookkeeping when due
--   ... the script's writes
--   session.finish(c, fields) the record (one HSET) and the TTLs
-- and its answer is return session.reply(c, answer) (a pending abort rides
-- on the answer's tag: lua.Decode).
--
-- The record (a hash) holds the core's fields: status (running, completed,
-- failed), started_at, last_activity_at, slid_at (the last bookkeeping,
-- µs), ttl_seconds (the session's own TTL), fams and idx (lib/lifecycle.lua)
-- and abort_requested_at; and the modules' own fields.
--
-- The user's marker (a hash named by the user's SHA1, so that it may
-- outlive an erasure without naming the user) is read by every write with
-- the record: fence (when set, "<code> <text>": every write of the user is
-- refused with it), keys (the user's kept keys: lifecycle.lua) and the
-- fields modules register (keys.marker; per session "<field>:<s>"), as
-- c.marks[field].
--- @include keys
--- @include clock
--- @include guard
--- @include reply
--- @include marker
--- @include families
--- @include lifecycle

local RECORD = 'agent_session_record:'
local MARKER = 'agent_user_marker:'

local function context(tag, uid, sid, marker, settings)
  local gid = uid .. ':' .. sid
  return {
    tag = tag, uid = uid, sid = sid, gid = gid, id = tag .. gid, record = RECORD .. tag .. gid, marker = marker,
    default_ttl = settings.ttl, grain = settings.grain, events_maxlen = settings.maxlen,
    events_watched = settings.watched, settings = settings, marks = {}, added = {},
  }
end

-- SETTINGS_MEMO holds the settings as the last call parsed them (text:
-- ARGV[1], value: the table): a pod sends the same ARGV[1] with every
-- call, which a function library (loaded once, called many times) then
-- parses once. A memo of its whole input: no session's data, and the
-- value is never written.
local SETTINGS_MEMO = {}

local function parse_settings(text)
  local m = SETTINGS_MEMO
  if text ~= m.text then
    local ttl, grain, maxlen, mode = string.match(text, '^(%d+) (%d+) (%d+) (%a)$')
    m.value = { ttl = tonumber(ttl), grain = tonumber(grain), maxlen = tonumber(maxlen), watched = mode == 'w' }
    m.text = text
  end
  return m.value
end

-- open is the context of this call's session (see the header).
local function open(KEYS, ARGV)
  if redis.replicate_commands then redis.replicate_commands() end
  local tag, uid, sid
  -- byte 22 is the one after 'agent_session_record:': '{' on Cluster (a
  -- key without a tag tries one pattern only)
  if string.byte(KEYS[1], 22) == 123 then
    tag, uid, sid = string.match(KEYS[1], '^agent_session_record:({[^}]*}:)([^:]*):(.*)$')
  end
  if not tag then
    tag = ''
    uid, sid = string.match(KEYS[1], '^agent_session_record:([^:]*):(.*)$')
  end
  return context(tag, uid, sid, KEYS[2] or (MARKER .. tag .. redis.sha1hex(uid)), parse_settings(ARGV[1]))
end

-- at is the context of session sid of c's user (fork, split,
-- start-or-reuse): the same settings, tag and marker, and Redis's clock
-- as c read it.
local function at(c, sid)
  local o = context(c.tag, c.uid, sid, c.marker, c.settings)
  o.now, o.now_text = c.now, c.now_text
  return o
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

-- now is Redis's clock (µs), read once a call; c.now_text the same as text.
local function now(c)
  if not c.now then
    c.now = clock.now_us()
    c.now_text = string.format('%d', c.now)
  end
  return c.now
end

-- ttl is the TTL the session slides to: its own, else SESSION_TTL_SECONDS
-- (0 = no expiry).
local function ttl(c)
  return c.own_ttl or c.default_ttl
end

-- begin reads the user's marker (fence, keys and the registered fields,
-- into c.marks) and the record (the core's fields, then fields, the
-- script's own, into c.rec by name), and returns the refusal of a write
-- that must not happen: the user is fenced, the marker or the record holds
-- another type, or a core field is not what the core keeps there
-- (c.refused_by says which: 'fence', 'marker' or 'record'). nil when the
-- write may go on. c.status is the stored status (nil: not started),
-- c.recorded whether the record exists.
local function begin(c, fields)
  local refused = marker.read(c)
  if refused then return refused end
  c.refused_by = 'record'
  local r = redis.pcall('HMGET', c.record, 'status', 'ttl_seconds', 'slid_at', 'fams', 'idx', 'abort_requested_at',
    unpack(fields or {}))
  if r.err then return guard.from_error(c.record, 'hash', r) end
  local status, own, slid = r[1] or nil, r[2] or nil, r[3] or nil
  if status and not lifecycle.IS_STATUS[status] then return guard.bad_field(c.record, 'status', 'a status') end
  if own and not string.match(own, '^%d+$') then return guard.bad_field(c.record, 'ttl_seconds', 'an integer') end
  if slid and not string.match(slid, '^%d+$') then return guard.bad_field(c.record, 'slid_at', 'an integer') end
  if r[5] then
    -- the sets that hold the session (lifecycle.idx): a bookkeeping reads
    -- them after its first write, so they are checked here
    local ok, list = pcall(cjson.decode, r[5])
    if not ok or type(list) ~= 'table' then return guard.bad_field(c.record, 'idx', 'a JSON array') end
    c.idx = list
  end
  c.refused_by, c.begun = nil, true
  c.status, c.own_ttl, c.slid_at = status, tonumber(own), tonumber(slid)
  c.fams_text, c.idx_text, c.abort = r[4] or nil, r[5] or nil, r[6] or nil
  c.recorded = status ~= nil or own ~= nil or slid ~= nil or c.fams_text ~= nil
  if fields then
    c.rec = {}
    for i, f in ipairs(fields) do
      local v = r[6 + i]
      if v then c.rec[f], c.recorded = v, true end
    end
  end
  return nil
end

-- check checks the keys of the families this write makes (use without
-- read_first) and of the user keys it keeps first: one EXISTS, a TYPE
-- each only when one exists. commit does it; a write of two sessions (a
-- split) checks the second's before the first's commit, so that a refusal
-- comes before any write. Returns the refusal, or nil.
local function check(c)
  local cs = c.checks
  if not cs then return nil end
  local ks = {}
  for i = 1, #cs do ks[i] = cs[i][1] end
  if redis.call('EXISTS', unpack(ks)) > 0 then
    local refused = guard.check(cs)
    if refused then return refused end
  end
  c.checks = nil
  return nil
end

-- commit makes the write's first writes, once every check of the script
-- passed: check, then, when due, the bookkeeping (lifecycle.bookkeeping):
-- the session's score in the status sets of its user and bucket, in the
-- expiry set and its activity indexes. It is due when the session starts,
-- changes status (opts.status), changes TTL (opts.force), gets a family it
-- did not have (all its keys then end together), or the last was at least
-- the grain ago: list order, 'abandoned' and the expiry set are exact to
-- the grain. With opts.quiet (a write that is no activity of the session:
-- a search's index step) only the checks. Returns the refusal (nothing
-- written), or nil.
local function commit(c, opts)
  local refused = check(c)
  if refused then return refused end
  if not c.status and not (opts and opts.quiet) then
    refused = families.cognee_first(c)
    if refused then return refused end
  end
  c.committed = true
  if opts and opts.quiet then
    c.quiet = true
    return nil
  end
  now(c)
  local t = ttl(c)
  c.to_status = opts and opts.status or c.status or 'running'
  c.due = not c.status or c.to_status ~= c.status or (opts and opts.force) or not c.slid_at
    or next(c.added) ~= nil or c.now - c.slid_at >= lifecycle.grain(c, t)
  if c.due then return lifecycle.bookkeeping(c, c.to_status, t) end
  return lifecycle.index_new(c)
end

-- fams_fields adds to hs the record's fams (and idx) when this write
-- changed them.
local function fams_fields(c, hs)
  if next(c.added) ~= nil or c.fams_changed then
    local set = families.fams_set(c)
    for code in pairs(c.added) do set[code] = true end
    local list = {}
    for code in pairs(set) do list[#list + 1] = code end
    table.sort(list)
    hs[#hs + 1], hs[#hs + 2] = 'fams', #list > 0 and (' ' .. table.concat(list, ' ') .. ' ') or ''
    c.fams_text = hs[#hs]
  end
  if c.idx_changed then hs[#hs + 1], hs[#hs + 2] = 'idx', cjson.encode(c.idx) end
end

-- expire gives keys ks the time the record has left (its TTL from the
-- session's last slide), so they end with it; t when it has none.
local function expire_with_record(c, ks, t)
  if #ks == 0 then return end
  local p = redis.call('PTTL', c.record)
  for _, k in ipairs(ks) do
    if p > 0 then redis.call('PEXPIRE', k, p) elseif t > 0 then redis.call('EXPIRE', k, t) end
  end
end

-- finish_quiet ends a quiet write: the record, when there is one, lists
-- the families the write made and its sets, and those keys end with the
-- record; a session only Cognee wrote (no record) has them end with its
-- entries list (the session's TTL while the list has none).
local function finish_quiet(c)
  local t = ttl(c)
  local made = c.made or {}
  for _, k in pairs(c.added) do made[#made + 1] = k end
  if c.recorded then
    local hs = {}
    fams_fields(c, hs)
    if #hs > 0 then redis.call('HSET', c.record, unpack(hs)) end
    expire_with_record(c, made, t)
    if next(c.added) ~= nil then lifecycle.slide_user(c, t) end
  else
    local p = redis.call('PTTL', families.key(c, keys.cognee_entries))
    for _, k in ipairs(made) do
      if p > 0 then redis.call('PEXPIRE', k, p) elseif t > 0 then redis.call('EXPIRE', k, t) end
    end
  end
  marker.list_keys(c, t)
  return false
end

-- finish ends a committed write: one HSET of the record (last activity,
-- the fields of a start or a status change, the bookkeeping's time, fams
-- and idx when changed, then fields: the script's own "name, value, ..."),
-- and the TTLs: every key of the session when the bookkeeping was due,
-- else only those this write made anew. Returns whether this write started
-- the session. opts.started_at: a new record's started_at (µs text); when
-- absent, the time of the first entry of a session Cognee began, else now.
local function finish(c, fields, opts)
  if not c.committed then error('session.finish before session.commit') end
  if c.quiet then return finish_quiet(c) end
  local n = c.now_text
  local hs = { 'last_activity_at', n }
  local started = not c.status
  if started or c.to_status ~= c.status then hs[#hs + 1], hs[#hs + 2] = 'status', c.to_status end
  if started then hs[#hs + 1], hs[#hs + 2] = 'started_at', (opts and opts.started_at) or families.cognee_start(c) or n end
  if c.due then hs[#hs + 1], hs[#hs + 2] = 'slid_at', n end
  local slid_set = c.due and families.fams_set(c)
  fams_fields(c, hs)
  if fields then
    for i = 1, #fields do hs[#hs + 1] = fields[i] end
  end
  redis.call('HSET', c.record, unpack(hs))
  local t = ttl(c)
  marker.list_keys(c, t)
  lifecycle.expire_new(c, t)
  if slid_set then
    for code in pairs(c.added) do slid_set[code] = true end
    lifecycle.slide(c, t, slid_set)
  elseif t > 0 and c.made then
    expire_with_record(c, c.made, t)
  end
  return started
end

-- own_ttl_changed notes, after the commit, that the session's own TTL
-- went from was to now (nil: none of its own; now nil: a delete): the
-- user's kept keys hold no TTL while a session of the user has none, and
-- get one back when the last such session gets one or goes.
local function own_ttl_changed(c, was, now)
  local t, others = marker.own_ttl_changed(c, was, now)
  if t then
    lifecycle.unpersist(c, t)
  elseif others then
    lifecycle.defer_unpersist(c)
  end
end

-- check_user and finish_user are a user's write that writes no session
-- (search_mark, the user's blocks and state): after session.begin, the
-- types of the user keys it keeps first (check_user, before its first
-- write), and their lifetime (finish_user: the default TTL's).
local function check_user(c)
  return check(c)
end

local function finish_user(c)
  marker.list_keys(c, c.default_ttl)
end

-- reply is answer r of the write, with the session's pending abort on its
-- tag ('ok@<µs>'), for the Sidecar-Abort-Requested header (lua.Decode).
local function session_reply(c, r)
  if c.abort and (r[1] == 'ok' or r[1] == 'dup') then r[1] = r[1] .. '@' .. c.abort end
  return r
end

-- clear_abort removes a pending abort request (a status change, the next
-- user message); returns whether one was set.
local function clear_abort(c)
  if not c.abort then return false end
  redis.call('HDEL', c.record, 'abort_requested_at')
  c.abort = nil
  return true
end

return {
  STATUSES = lifecycle.STATUSES,
  IS_STATUS = lifecycle.IS_STATUS,
  TOMBSTONE = '\0sidecar:deleted',
  open = open,
  at = at,
  key = families.key,
  user_key = user_key,
  bucket_key = bucket_key,
  user_set = lifecycle.user_set,
  global_set = lifecycle.global_set,
  expiry = lifecycle.expiry,
  now = now,
  ttl = ttl,
  begin = begin,
  has = families.has,
  use = families.use,
  drop = families.drop,
  made = families.made,
  keep = marker.keep,
  user_made = marker.user_made,
  forget = marker.forget,
  index_in = lifecycle.index_in,
  member_of = lifecycle.member_of,
  index_out = lifecycle.index_out,
  check = check,
  commit = commit,
  finish = finish,
  check_user = check_user,
  finish_user = finish_user,
  reply = session_reply,
  clear_abort = clear_abort,
  cognee_keys = families.cognee_keys,
  exists = families.exists,
  own_keys = families.own_keys,
  unindex = lifecycle.unindex,
  own_ttl_changed = own_ttl_changed,
  forget_marks = marker.forget_marks,
  set_ttl = families.set_ttl,
}
