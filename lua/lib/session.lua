-- session: a session's context and the bookkeeping every write of it does.
--
-- Every session script gets the same KEYS (redisstore/keys.go builds them):
--   KEYS[1] entries list   agent_sessions:<u>:<s>   (Cognee's Q&A list)
--   KEYS[2] traces list    agent_traces:<u>:<s>     (Cognee's)
--   KEYS[3] context list   session_context:<u>:<s>  (Cognee's)
--   KEYS[4] record hash    agent_session_record:<u>:<s>
--   KEYS[5] qa_id index    agent_session_qa_index:<u>:<s>
--   KEYS[6] usage ids hash agent_session_usage_ids:<u>:<s> (Idempotency-Key -> result)
--   KEYS[7..9]   the user's sessions by last activity, by stored status:
--                running, completed, failed (zsets)
--   KEYS[10..12] the same across users, members "<u>:<s>"
--   KEYS[13] expiry zset   agent_sessions_global:expiry ("<u>:<s>" -> expiry, µs)
--   KEYS[14] totals hash   agent_usage_totals
--   KEYS[15] by-model hash agent_usage_by_model
-- and the same first ARGVs:
--   ARGV[1] SESSION_TTL_SECONDS (0 = no expiry)
--   ARGV[2] SESSION_MAX_ENTRIES (0 = unbounded), optionally followed by
--           ':' and SESSION_EVENTS_MAXLEN ("0:1000"; 1000 when absent),
--           then ':w' when SESSION_EVENTS=watched ("0:1000:w": events are
--           recorded only while their stream is watched, lib/events.lua)
--   ARGV[3] user_id
--   ARGV[4] session_id
-- Script-specific ARGVs start at ARGV[5].
--
-- Those are the standalone (Cognee) names. On Redis Cluster every key
-- carries its user's bucket tag after the prefix (agent_sessions:{b7}:<u>:<s>,
-- agent_sessions_global:{b7}:running, agent_usage_totals:{b7}, ...), so all 15
-- keys of a call share one hash slot and KEYS[10..15] are the bucket's shard
-- of the data across users. Besides KEYS, scripts touch only keys derived
-- from them in the same slot (the same tag): the session's other own keys
-- (session.key), the user's keys (session.user_key), the metadata indexes
-- (meta) and, in the registry scripts, the user's other sessions
-- (session.at).
--
-- A script opens its call's context, c = session.open(KEYS, ARGV), and
-- passes it to every helper: the session's keys (c.entries, c.traces,
-- c.context, c.record, c.qa_index, c.usage_ids, c.user_sets[status],
-- c.global_sets[status], c.expiry, c.totals, c.by_model, and, made when
-- first asked, c.ctx_index, c.events, c.edocs, c.sdocs, c.state,
-- c.user_events, c.user_state, c.sstats, c.slist), its settings
-- (c.default_ttl, c.max_entries, c.events_maxlen, c.events_watched) and ids (c.uid, c.sid,
-- c.gid = "<u>:<s>", c.tag). session.at(c, sid) is the context of another
-- session of the same user. Nothing outlives the call.
--
-- A session's own keys are those of every registered session family
-- (keys.session, generated from the families packages register in Go): a
-- TTL slide moves them all and a delete removes them all, a module's own
-- families among them.
--
-- The session record's status decides which index sets hold the session;
-- "abandoned" is never stored: it is a score range of the running set.
--- @include keys
--- @include clock
--- @include guard
--- @include meta
--- @include erasure

local STATUSES = { 'running', 'completed', 'failed' }

-- the keys a context makes when first asked: the session's, then the user's
local OWN = {
  ctx_index = 'agent_session_context_index', events = 'agent_session_events',
  edocs = 'agent_search_entry_docs', sdocs = 'agent_search_docs', state = 'agent_session_state',
}
local USER = { user_events = 'agent_user_events', user_state = 'agent_user_state', sstats = 'agent_search_stats',
  slist = 'agent_search_sessions' }
local CTX = {}
CTX.__index = function(c, name)
  local v
  if OWN[name] then
    v = OWN[name] .. ':' .. c.tag .. c.gid
  elseif USER[name] then
    v = USER[name] .. ':' .. c.tag .. c.uid
  else
    return nil
  end
  rawset(c, name, v)
  return v
end

-- open is the context of this call's session (see the header).
local function open(KEYS, ARGV)
  if redis.replicate_commands then redis.replicate_commands() end
  local uid, sid, record = ARGV[3], ARGV[4], KEYS[4]
  local gid = uid .. ':' .. sid
  return setmetatable({
    entries = KEYS[1], traces = KEYS[2], context = KEYS[3], record = record, qa_index = KEYS[5],
    usage_ids = KEYS[6],
    user_sets = { running = KEYS[7], completed = KEYS[8], failed = KEYS[9] },
    global_sets = { running = KEYS[10], completed = KEYS[11], failed = KEYS[12] },
    expiry = KEYS[13], totals = KEYS[14], by_model = KEYS[15],
    default_ttl = tonumber(ARGV[1]),
    max_entries = tonumber(string.match(ARGV[2], '^%-?%d+')),
    events_maxlen = tonumber(string.match(ARGV[2], '^%-?%d+:(%d+)') or '1000'),
    events_watched = string.sub(ARGV[2], -2) == ':w',
    uid = uid, sid = sid, gid = gid,
    tag = string.sub(record, #'agent_session_record:' + 1, #record - #gid),
  }, CTX)
end

-- at is the context of session sid of c's user: every session key ends in
-- "<u>:<s>", and the user's indexes, the bucket's shards and the tag are
-- the same for all of them, so every key stays in the user's slot on Redis
-- Cluster (start-or-reuse, fork, split).
local function at(c, sid)
  local cut = #c.sid
  local function key(k) return string.sub(k, 1, #k - cut) .. sid end
  return setmetatable({
    entries = key(c.entries), traces = key(c.traces), context = key(c.context), record = key(c.record),
    qa_index = key(c.qa_index), usage_ids = key(c.usage_ids),
    user_sets = c.user_sets, global_sets = c.global_sets,
    expiry = c.expiry, totals = c.totals, by_model = c.by_model,
    default_ttl = c.default_ttl, max_entries = c.max_entries, events_maxlen = c.events_maxlen,
    events_watched = c.events_watched,
    uid = c.uid, sid = sid, gid = c.uid .. ':' .. sid, tag = c.tag,
  }, CTX)
end

-- key is the session's key of family prefix (<prefix>:<tag><u>:<s>): a
-- module's own keys.
local function key(c, prefix)
  return prefix .. ':' .. c.tag .. c.gid
end

-- user_key is the user's key of family prefix (<prefix>:<tag><u>).
local function user_key(c, prefix)
  return prefix .. ':' .. c.tag .. c.uid
end

-- own_keys lists every own key of the session (see the header).
local function own_keys(c)
  local out, id = {}, c.tag .. c.gid
  for i, p in ipairs(keys.session) do out[i] = p .. ':' .. id end
  return out
end

-- ttl is the TTL the session's keys slide to: its own, else
-- SESSION_TTL_SECONDS (0 = no expiry).
local function ttl(c)
  local own = redis.pcall('HGET', c.record, 'ttl_seconds')
  if type(own) == 'string' and string.match(own, '^%d+$') then return tonumber(own) end
  return c.default_ttl
end

-- guard returns the refusal (guard.lua) of the first key the script would
-- write that exists with another type, or a record field finish_write
-- reads that is not what it should be, or nil. Every writing script calls
-- it before its first write. mode says which of the bookkeeping keys the
-- script may write:
--   'keep'    the record, and the status sets of the session's stored
--             status (all of them for a session without a record yet,
--             which finish_write files as new) and the expiry set;
--   'move'    the record and every status set (the write ends the session);
--   'indexes' every status set, not the record (session delete).
-- ... are the script's own {key, type} pairs (guard.check's, 'self' too).
-- The metadata indexes of the record's pairs (which finish_write scores)
-- are checked too, and the session's event stream.
--
-- With nil, guard returns the record's fields as it read them
-- ({status, ttl_seconds, slid_at, metadata}, finish_write's order; nil in
-- mode 'indexes'), for a script that does not change them before
-- finish_write to pass on. A user being erased has every write refused
-- first (erasure.fenced).
local function session_guard(c, mode, ...)
  local erasing = erasure.fenced(c)
  if erasing then return erasing end
  local checks = { ... }
  local status, read
  if mode ~= 'indexes' then
    local rec = redis.pcall('HMGET', c.record, 'status', 'ttl_seconds', 'slid_at', 'metadata')
    if rec.err then
      checks[#checks + 1] = { c.record, 'hash' }
    else
      status = rec[1]
      -- the record fields finish_write reads as a status and as numbers
      if status and not c.user_sets[status] then return guard.bad_field(c.record, 'status', 'a status') end
      if rec[2] and not string.match(rec[2], '^%-?%d+$') then
        return guard.bad_field(c.record, 'ttl_seconds', 'an integer')
      end
      if rec[3] and not string.match(rec[3], '^%-?%d+$') then
        return guard.bad_field(c.record, 'slid_at', 'an integer')
      end
      if rec[4] then
        for _, m in ipairs(meta.checks(c, rec[4])) do checks[#checks + 1] = m end
      end
      read = rec
    end
    checks[#checks + 1] = { c.entries, 'list' } -- finish_write counts it
  end
  if mode == 'keep' and status and c.user_sets[status] then
    checks[#checks + 1] = { c.user_sets[status], 'zset' }
    checks[#checks + 1] = { c.global_sets[status], 'zset' }
    checks[#checks + 1] = { c.expiry, 'zset' }
  else
    for _, st in ipairs(STATUSES) do checks[#checks + 1] = { c.user_sets[st], 'zset' } end
    for _, st in ipairs(STATUSES) do checks[#checks + 1] = { c.global_sets[st], 'zset' } end
    checks[#checks + 1] = { c.expiry, 'zset' }
  end
  checks[#checks + 1] = { c.events, 'stream' }
  local refused = guard.check(checks)
  if refused then return refused end
  return nil, read
end

-- check_finish is guard's finding for a script that has read the record
-- itself, as a message (nil: finish_write and unindex cannot fail):
--   rec: {status=, ttl_seconds=, slid_at=} of the record when the caller has
--     read them (from a hash it checked), else nil: then read here (with
--     metadata=, whose indexes finish_write scores: read here when absent)
--   moved: the write changes the status (all three index sets are written)
--   entries_read: the caller has read the entries list (its type is right)
local function check_finish(c, rec, moved, entries_read)
  local bad
  if not rec then
    bad = guard.describe(c.record, 'hash')
    if bad then return bad end
    local v = redis.call('HMGET', c.record, 'status', 'ttl_seconds', 'slid_at', 'metadata')
    rec = { status = v[1], ttl_seconds = v[2], slid_at = v[3], metadata = v[4] }
  end
  local m = rec.metadata
  if m == nil then m = redis.call('HGET', c.record, 'metadata') end
  for _, p in ipairs(meta.checks(c, m)) do
    bad = guard.describe(p[1], p[2])
    if bad then return bad end
  end
  for _, f in ipairs({ 'ttl_seconds', 'slid_at' }) do
    if rec[f] and not string.match(rec[f], '^%-?%d+$') then
      return string.format('field %s of Redis key %s is not an integer', f, c.record)
    end
  end
  if rec.status and not c.user_sets[rec.status] then
    return string.format('field status of Redis key %s is not a status', c.record)
  end
  bad = (not entries_read and guard.describe(c.entries, 'list')) or guard.describe(c.expiry, 'zset')
    or guard.describe(c.events, 'stream')
  if bad then return bad end
  -- A session that keeps its status is only scored in that status's sets.
  local statuses = STATUSES
  if rec.status and not moved then statuses = { rec.status } end
  for _, st in ipairs(statuses) do
    bad = guard.describe(c.user_sets[st], 'zset') or guard.describe(c.global_sets[st], 'zset')
    if bad then return bad end
  end
  return nil
end

-- index files the session under its status, scored by last activity. A
-- session that keeps its status only moves its scores (two ZADDs); a new or
-- just-ended one also leaves the sets of the other statuses.
local function index(c, status, score, moved)
  redis.call('ZADD', c.user_sets[status], score, c.sid)
  redis.call('ZADD', c.global_sets[status], score, c.gid)
  if moved then
    for _, st in ipairs(STATUSES) do
      if st ~= status then
        redis.call('ZREM', c.user_sets[st], c.sid)
        redis.call('ZREM', c.global_sets[st], c.gid)
      end
    end
  end
end

-- unindex removes the session from every index set.
local function unindex(c)
  for _, st in ipairs(STATUSES) do
    redis.call('ZREM', c.user_sets[st], c.sid)
    redis.call('ZREM', c.global_sets[st], c.gid)
  end
  redis.call('ZREM', c.expiry, c.gid)
end

-- slide applies ttl to every own key of the session, or removes expiry for
-- 0, and notes when the session will expire so reads can drop it from the
-- indexes (Redis expiry does not touch sorted sets).
local function slide(c, t, now)
  for _, k in ipairs(own_keys(c)) do
    if t > 0 then
      redis.call('EXPIRE', k, t)
    else
      redis.call('PERSIST', k)
    end
  end
  if t > 0 then
    redis.call('ZADD', c.expiry, now + t * 1000000, c.gid)
  else
    redis.call('ZADD', c.expiry, '+inf', c.gid)
  end
end

-- exists reports whether any of the session's Cognee lists or its record
-- exists.
local function exists(c)
  return redis.call('EXISTS', c.entries, c.traces, c.context, c.record) > 0
end

-- started_at_of is a new record's started_at (µs, as a string): the time
-- of the session's first entry when another writer (Cognee) made the list
-- before this first write of ours, else now. One LINDEX, never a scan.
local function started_at_of(c, now, own_first)
  if not own_first then
    local first = redis.call('LINDEX', c.entries, 0)
    local t = first and clock.entry_time_us(first)
    if t and t < now then return string.format('%d', t) end
  end
  return string.format('%d', now)
end

-- SLIDE_EVERY_MAX bounds how stale a TTL may get between two slides (s).
local SLIDE_EVERY_MAX = 60

-- finish_write is the common tail of every write. It records activity in
-- the session record (created as running by the first write), moves the
-- session's place in the indexes, and slides the TTL of every key of the
-- session to the session's TTL: its own (set with PUT .../ttl, 0 = persist)
-- when it has one, else SESSION_TTL_SECONDS.
--
-- A slide costs a call per key of the session (and one ZADD), so a write
-- within min(60 s, TTL/1000) of the last slide skips it: a 7-day TTL is
-- then at most a minute short of exact, never half-applied. A write that
-- created a key (force), started the session or changed its status always
-- slides.
--   moved: the write changed the status (ended the session)
--   force: the write created a key of the session, or changed its TTL
--   count: the entries list's length, when the caller knows it
--   own_first: the entries list's first element is this write's (a new
--     record then starts now, not at the first entry's time)
--   rec: the record as guard read it (its second answer), when the script
--     has not changed the record since (else nil: read here)
-- Returns the status and whether this write started the session.
local function finish_write(c, moved, force, count, own_first, rec)
  local now = clock.now_us()
  local n = string.format('%d', now) -- tostring would round to 14 digits
  rec = rec or redis.call('HMGET', c.record, 'status', 'ttl_seconds', 'slid_at', 'metadata')
  local status, started = rec[1], false
  local t = c.default_ttl
  if rec[2] then t = tonumber(rec[2]) end
  count = count or redis.call('LLEN', c.entries)
  local due = force or moved or not status or not rec[3]
  if not due and t > 0 then
    local every = math.min(SLIDE_EVERY_MAX, math.floor(t / 1000)) * 1000000
    due = now - tonumber(rec[3]) >= every
  end
  local fields = { 'last_activity_at', n, 'entry_count', count }
  if not status then
    status, started = 'running', true
    fields[#fields + 1], fields[#fields + 2] = 'status', status
    fields[#fields + 1], fields[#fields + 2] = 'started_at', started_at_of(c, now, own_first)
  end
  if due then
    fields[#fields + 1], fields[#fields + 2] = 'slid_at', n
  end
  redis.call('HSET', c.record, unpack(fields))
  index(c, status, now, started or moved)
  meta.index(c, rec[4], now, due and t or nil)
  if due then
    slide(c, t, now)
    -- the user's state and search keys live as long as the user's
    -- sessions are written
    meta.expire(c.user_state, t, redis.call('PTTL', c.user_state))
    for _, k in ipairs({ c.sstats, c.slist }) do
      local pk = redis.call('PTTL', k)
      if pk ~= -2 then meta.expire(k, t, pk) end
    end
    -- an ADK session's user keys of its app (module adk) live as long as it
    local app = redis.call('HGET', 'adk_session:' .. c.tag .. c.gid, 'app')
    for _, f in ipairs(app and { 'adk_user_state:', 'adk_index:' } or {}) do
      local k = f .. c.tag .. c.uid .. ':' .. app
      local pk = redis.call('PTTL', k)
      if pk ~= -2 then meta.expire(k, t, pk) end
    end
  end
  return status, started
end

-- clear_abort removes a pending abort request (a status change, the next
-- user message); returns whether one was set. Call it before finish_write.
local function clear_abort(c)
  return redis.call('HDEL', c.record, 'abort_requested_at') == 1
end

return {
  STATUSES = STATUSES,
  TOMBSTONE = '\0sidecar:deleted',
  open = open,
  at = at,
  key = key,
  user_key = user_key,
  own_keys = own_keys,
  ttl = ttl,
  guard = session_guard,
  check_finish = check_finish,
  index = index,
  unindex = unindex,
  slide = slide,
  exists = exists,
  started_at_of = started_at_of,
  finish_write = finish_write,
  clear_abort = clear_abort,
}
