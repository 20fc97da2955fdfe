-- session_lib.lua: helpers prepended to every session_*.lua script.
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
--   ARGV[2] SESSION_MAX_ENTRIES (0 = unbounded)
--   ARGV[3] user_id
--   ARGV[4] session_id
-- Script-specific ARGVs start at ARGV[5].
--
-- Those are the standalone (Cognee) names. On Redis Cluster every key
-- carries its user's bucket tag after the prefix (agent_sessions:{b7}:<u>:<s>,
-- agent_sessions_global:{b7}:running, agent_usage_totals:{b7}, ...), so all 15
-- keys of a call share one hash slot and KEYS[10..15] are the bucket's shard
-- of the data across users. Besides KEYS, scripts touch only keys derived
-- from them in the same slot (the same tag): the session's state, the
-- user's state and metadata indexes (below), the day's model totals
-- (session_usage.lua) and, in the registry scripts, the user's other
-- sessions (registry_lib.lua).
--
-- JSON is never decoded and re-encoded here (Lua cjson turns [] into {},
-- re-encodes numbers and escapes '/', and Cognee's json.dumps writes bare
-- NaN): a small scanner finds the byte span of each top-level field, and
-- edits splice new values (encoded by the sidecar) into those spans, so the
-- bytes of every other field stay exactly as they were.
--
-- The qa_id index maps qa_id -> absolute sequence number (position + '#head',
-- the number of entries ever trimmed from the left); '#len' is the list
-- length the index describes and '#last' the qa_id of its last element. A
-- lookup is checked against the element it
-- points at, so writes by Cognee (RPUSH, LSET, DEL + re-RPUSH) can make the
-- index stale but never wrong: a stale index is rebuilt with one scan.
--
-- The session record's status decides which index sets hold the session;
-- "abandoned" is never stored: it is a score range of the running set.

if redis.replicate_commands then redis.replicate_commands() end

local K_ENTRIES, K_TRACES, K_CONTEXT, K_RECORD, K_INDEX, K_USAGE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local SESSION_KEYS = { K_ENTRIES, K_TRACES, K_CONTEXT, K_RECORD, K_INDEX, K_USAGE }
local K_USER = { running = KEYS[7], completed = KEYS[8], failed = KEYS[9] }
local K_GLOBAL = { running = KEYS[10], completed = KEYS[11], failed = KEYS[12] }
local K_EXPIRY, K_TOTALS, K_BY_MODEL = KEYS[13], KEYS[14], KEYS[15]
local DEFAULT_TTL = tonumber(ARGV[1])
local MAX_ENTRIES = tonumber(ARGV[2])
local SID = ARGV[4]                -- member of the user's index sets
local GID = ARGV[3] .. ':' .. ARGV[4] -- member of the global index sets
local TOMBSTONE = '\0sidecar:deleted'

-- now_us is the Redis server's clock in microseconds, so pods with skewed
-- clocks agree on activity times.
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- JSON scanning --------------------------------------------------------------

local function skip_ws(s, i)
  return string.find(s, '[^ \t\r\n]', i) or (#s + 1)
end

-- skip_string: s[i] is '"'; returns the index just past the closing quote.
local function skip_string(s, i)
  i = i + 1
  while true do
    local j = string.find(s, '["\\]', i)
    if not j then error('unterminated JSON string') end
    if string.byte(s, j) == 34 then return j + 1 end
    i = j + 2
  end
end

-- skip_value returns the index just past the JSON value starting at s[i].
local function skip_value(s, i)
  local c = string.byte(s, i)
  if c == 34 then return skip_string(s, i) end
  if c == 123 or c == 91 then
    local depth = 0
    while true do
      local j = string.find(s, '[%[%]{}"]', i)
      if not j then error('unterminated JSON container') end
      local b = string.byte(s, j)
      if b == 34 then
        i = skip_string(s, j)
      elseif b == 123 or b == 91 then
        depth = depth + 1
        i = j + 1
      else
        depth = depth - 1
        i = j + 1
        if depth == 0 then return i end
      end
    end
  end
  -- number, true, false, null, NaN, Infinity, -Infinity
  return string.find(s, '[,}%]%s]', i) or (#s + 1)
end

-- object_fields scans a JSON object: returns an array of
-- {key=, ks=, vs=, ve=} (key span start, value span [vs, ve)) and the index
-- of the closing brace.
local function object_fields(s)
  local fields = {}
  local i = skip_ws(s, 1)
  if string.byte(s, i) ~= 123 then error('entry is not a JSON object') end
  i = skip_ws(s, i + 1)
  if string.byte(s, i) == 125 then return fields, i end
  while true do
    if string.byte(s, i) ~= 34 then error('bad JSON object key') end
    local ke = skip_string(s, i)
    local key = string.sub(s, i + 1, ke - 2)
    local ks = i
    i = skip_ws(s, ke)
    if string.byte(s, i) ~= 58 then error('missing : in JSON object') end
    local vs = skip_ws(s, i + 1)
    local ve = skip_value(s, vs)
    fields[#fields + 1] = { key = key, ks = ks, vs = vs, ve = ve }
    i = skip_ws(s, ve)
    local b = string.byte(s, i)
    if b == 125 then return fields, i end
    if b ~= 44 then error('bad JSON object separator') end
    i = skip_ws(s, i + 1)
  end
end

-- field_raw returns the raw JSON text of top-level field key, or nil.
local function field_raw(s, key)
  local fields = object_fields(s)
  for _, f in ipairs(fields) do
    if f.key == key then return string.sub(s, f.vs, f.ve - 1) end
  end
  return nil
end

-- id_of returns the string value of top-level field key ('qa_id', 'id'),
-- or nil. For qa_id a pattern finds it without scanning the whole entry: it
-- cannot match inside a string value (quotes there are escaped), and in a
-- Q&A entry qa_id comes before the only fields that could nest one. Other
-- keys ('id' of free-form context objects, which may nest an "id") and ids
-- with escapes take the full top-level scan.
local function id_of(s, key)
  if key == 'qa_id' then
    -- plain find (no pattern backtracking over the whole entry), then an
    -- anchored match at that spot
    local at = string.find(s, '"qa_id"', 1, true)
    if not at then return nil end
    local id = string.match(s, '^%s*:%s*"([^"\\]*)"', at + 7)
    if id then return id end
  end
  if not string.find(s, '"' .. key .. '"', 1, true) then return nil end
  local ok, raw = pcall(field_raw, s, key)
  if ok and raw and string.byte(raw, 1) == 34 then return cjson.decode(raw) end
  return nil
end

-- set_fields returns s with the top-level fields in updates (an array of
-- {key, raw_json}) replaced in place, or appended before the closing brace
-- when absent. Untouched fields keep their exact bytes. A key named twice in
-- updates is set once, to its last value, where Python's json.loads would
-- put it (two splices into one span would write invalid JSON).
local function set_fields(s, updates)
  local fields, close = object_fields(s)
  local by_key, last, done = {}, {}, {}
  for _, f in ipairs(fields) do
    if by_key[f.key] == nil then by_key[f.key] = f end
  end
  for _, u in ipairs(updates) do last[u[1]] = u[2] end
  local spans, extra = {}, {}
  for _, u in ipairs(updates) do
    local k = u[1]
    local f = by_key[k]
    if done[k] then
      -- named again: set once, to the last value
    elseif f then
      spans[#spans + 1] = { f.vs, f.ve, last[k] }
    else
      extra[#extra + 1] = '"' .. k .. '": ' .. last[k]
    end
    done[k] = true
  end
  table.sort(spans, function(a, b) return a[1] < b[1] end)
  local out, pos = {}, 1
  for _, sp in ipairs(spans) do
    out[#out + 1] = string.sub(s, pos, sp[1] - 1)
    out[#out + 1] = sp[3]
    pos = sp[2]
  end
  if #extra > 0 then
    out[#out + 1] = string.sub(s, pos, close - 1)
    out[#out + 1] = (#fields > 0 and ', ' or '') .. table.concat(extra, ', ')
    pos = close
  end
  out[#out + 1] = string.sub(s, pos)
  return table.concat(out)
end

-- merge_object merges the fields of JSON object text patch into JSON object
-- text base (or null/absent: then into {}), key-wise, keeping base's bytes
-- for the keys patch does not name. Returns the merged object text.
local function merge_object(base, patch)
  local pfields = object_fields(patch)
  if base == nil or string.byte(base, 1) ~= 123 then base = '{}' end
  local updates = {}
  for _, f in ipairs(pfields) do
    updates[#updates + 1] = { f.key, string.sub(patch, f.vs, f.ve - 1) }
  end
  return set_fields(base, updates)
end

-- The qa_id index ----------------------------------------------------------

local function hset_chunks(key, args)
  for i = 1, #args, 1000 do
    local chunk = {}
    for j = i, math.min(i + 999, #args) do chunk[#chunk + 1] = args[j] end
    redis.call('HSET', key, unpack(chunk))
  end
end

-- rebuild_index rescans the entries list (O(n)); returns all its elements.
local function rebuild_index()
  local all = redis.call('LRANGE', K_ENTRIES, 0, -1)
  redis.call('DEL', K_INDEX)
  -- An empty list needs no index: writing one would leave a key the TTL
  -- slide does not reach once the list is gone (it expires with nothing).
  if #all == 0 then return all end
  local last = ''
  if #all > 0 then last = id_of(all[#all], 'qa_id') or '' end
  local args = { '#head', '0', '#len', tostring(#all), '#last', last }
  for i, el in ipairs(all) do
    local id = id_of(el, 'qa_id')
    if id then
      args[#args + 1] = id
      args[#args + 1] = tostring(i - 1)
    end
  end
  hset_chunks(K_INDEX, args)
  -- A rebuild on a read path must not leave an index that outlives its list.
  local pttl = redis.call('PTTL', K_ENTRIES)
  if pttl > 0 then redis.call('PEXPIRE', K_INDEX, pttl) end
  return all
end

-- index_fresh reports whether the index describes the list as it is. Every
-- write of ours keeps '#len' equal to the list length and '#last' equal to
-- the qa_id of the last element, so another writer that appended, removed,
-- or removed and appended (Cognee's delete then create) shows as a mismatch.
-- len and last are the index's '#len' and '#last' when the caller has them.
local function index_fresh(llen, len, last)
  if len == nil then
    local meta = redis.call('HMGET', K_INDEX, '#len', '#last')
    len, last = meta[1], meta[2]
  end
  if not len or tonumber(len) ~= llen then return false end
  if llen == 0 then return true end
  local el = redis.call('LINDEX', K_ENTRIES, -1)
  return (el and id_of(el, 'qa_id') or '') == (last or '')
end

-- REPAIR_TAIL_MAX bounds the tail repair_index indexes in one script.
local REPAIR_TAIL_MAX = 1000

-- repair_index brings a stale index up to date. When another writer only
-- appended since the index last described the list (Cognee's RPUSH: the
-- element at the index's last position is still the one it saw last), it
-- indexes just the new tail: O(appended), at most REPAIR_TAIL_MAX elements,
-- and returns nil. Anything else (a delete, a rewrite, a longer tail) is a
-- full rebuild, whose elements it returns.
local function repair_index(llen)
  local meta = redis.call('HMGET', K_INDEX, '#len', '#last', '#head')
  local len = tonumber(meta[1] or '')
  if len and len > 0 and llen > len and llen - len <= REPAIR_TAIL_MAX then
    local el = redis.call('LINDEX', K_ENTRIES, len - 1)
    if el and (id_of(el, 'qa_id') or '') == (meta[2] or '') then
      local head = tonumber(meta[3] or '0')
      local tail = redis.call('LRANGE', K_ENTRIES, len, llen - 1)
      local args = {}
      for i, e in ipairs(tail) do
        local id = id_of(e, 'qa_id')
        if id then
          args[#args + 1] = id
          args[#args + 1] = string.format('%d', head + len + i - 1)
        end
      end
      args[#args + 1], args[#args + 2] = '#len', tostring(llen)
      args[#args + 1], args[#args + 2] = '#last', id_of(tail[#tail], 'qa_id') or ''
      hset_chunks(K_INDEX, args)
      return nil
    end
  end
  return rebuild_index()
end

-- locate finds the entry with qa_id: returns its position (0-based) and
-- bytes, or nil. O(1) through the index; when the index is stale, O(appended) after
-- another writer only appended, else one scan.
local function locate(qa_id)
  local llen = redis.call('LLEN', K_ENTRIES)
  if llen == 0 then return nil end
  local fresh = index_fresh(llen)
  local seq = redis.call('HGET', K_INDEX, qa_id)
  if seq then
    local head = tonumber(redis.call('HGET', K_INDEX, '#head') or '0')
    local pos = tonumber(seq) - head
    if pos >= 0 and pos < llen then
      local el = redis.call('LINDEX', K_ENTRIES, pos)
      if el and id_of(el, 'qa_id') == qa_id then return pos, el end
    end
  elseif fresh then
    return nil -- the index knows every entry: absent
  else
    local all = repair_index(llen)
    if not all then -- the tail is indexed: the index knows every entry now
      seq = redis.call('HGET', K_INDEX, qa_id)
      if not seq then return nil end
      local pos = tonumber(seq) - tonumber(redis.call('HGET', K_INDEX, '#head') or '0')
      local el = redis.call('LINDEX', K_ENTRIES, pos)
      if el and id_of(el, 'qa_id') == qa_id then return pos, el end
    else
      for i, el in ipairs(all) do
        if id_of(el, 'qa_id') == qa_id then return i - 1, el end
      end
      return nil
    end
  end
  local all = rebuild_index()
  for i, el in ipairs(all) do
    if id_of(el, 'qa_id') == qa_id then return i - 1, el end
  end
  return nil
end

-- trim keeps about the newest MAX_ENTRIES of list key (0 = unbounded) in
-- batches: a list longer than 1.25 x MAX_ENTRIES is cut back to the newest
-- MAX_ENTRIES, so the positions of the elements shift once per quarter of
-- MAX_ENTRIES appends, not on every append (Cognee updates an entry with
-- LSET at the position it read). Returns the removed elements. llen is the
-- list's length when the caller knows it.
local function trim(key, llen)
  if MAX_ENTRIES <= 0 then return {} end
  llen = llen or redis.call('LLEN', key)
  if llen * 4 <= MAX_ENTRIES * 5 then return {} end
  local k = llen - MAX_ENTRIES
  local removed = redis.call('LRANGE', key, 0, k - 1)
  redis.call('LTRIM', key, k, -1)
  return removed
end

-- find_by_id scans list key for the element whose top-level field idkey is
-- id; returns its position (0-based) and bytes, or nil. For the short
-- context list.
local function find_by_id(key, idkey, id)
  local all = redis.call('LRANGE', key, 0, -1)
  for i, el in ipairs(all) do
    if id_of(el, idkey) == id then return i - 1, el end
  end
  return nil
end

-- remove_at deletes the element at pos of list key.
local function remove_at(key, pos)
  redis.call('LSET', key, pos, TOMBSTONE)
  redis.call('LREM', key, 1, TOMBSTONE)
end

-- Key types ----------------------------------------------------------------

-- guard returns an error reply naming the first key the script would write
-- that exists with another type (another program wrote it), or nil. Every
-- writing script calls it before its first write, so a wrong type is a
-- clear refusal ("KEYTYPE <key> <type> <wanted type>", which the Go side
-- maps to 409 key_wrong_type) and never a half-done write. mode says which
-- of the bookkeeping keys the script may write:
--   'keep'    the record, and the status sets of the session's stored
--             status (all of them for a session without a record yet,
--             which finish_write files as new) and the expiry set;
--   'move'    the record and every status set (the write ends the session);
--   'indexes' every status set, not the record (session delete).
-- ... are the script's own {key, type} pairs. The metadata indexes of the
-- record's pairs (which finish_write scores) are checked too.
local meta_checks -- (meta) -> {key, 'zset'} pairs: defined with meta_keys below
local function guard(mode, ...)
  local checks = { ... }
  local status
  if mode ~= 'indexes' then
    local rec = redis.pcall('HMGET', K_RECORD, 'status', 'metadata')
    if rec.err then
      checks[#checks + 1] = { K_RECORD, 'hash' }
    else
      status = rec[1]
      for _, c in ipairs(meta_checks(rec[2])) do checks[#checks + 1] = c end
    end
  end
  if mode == 'keep' and status and K_USER[status] then
    checks[#checks + 1] = { K_USER[status], 'zset' }
    checks[#checks + 1] = { K_GLOBAL[status], 'zset' }
    checks[#checks + 1] = { K_EXPIRY, 'zset' }
  else
    for i = 7, 13 do checks[#checks + 1] = { KEYS[i], 'zset' } end
  end
  for _, c in ipairs(checks) do
    local got = redis.call('TYPE', c[1])
    if type(got) == 'table' then got = got.ok end
    if got ~= 'none' and got ~= c[2] then
      return redis.error_reply('KEYTYPE ' .. c[1] .. ' ' .. got .. ' ' .. c[2])
    end
  end
  return nil
end

-- Session bookkeeping ------------------------------------------------------

local STATUSES = { 'running', 'completed', 'failed' }

-- index files the session under its status, scored by last activity. A
-- session that keeps its status only moves its scores (two ZADDs); a new or
-- just-ended one also leaves the sets of the other statuses.
local function index(status, score, moved)
  redis.call('ZADD', K_USER[status], score, SID)
  redis.call('ZADD', K_GLOBAL[status], score, GID)
  if moved then
    for _, st in ipairs(STATUSES) do
      if st ~= status then
        redis.call('ZREM', K_USER[st], SID)
        redis.call('ZREM', K_GLOBAL[st], GID)
      end
    end
  end
end

-- unindex removes the session from every index set.
local function unindex()
  for _, st in ipairs(STATUSES) do
    redis.call('ZREM', K_USER[st], SID)
    redis.call('ZREM', K_GLOBAL[st], GID)
  end
  redis.call('ZREM', K_EXPIRY, GID)
end

-- slide applies ttl to every key of the session, or removes expiry for 0,
-- and notes when the session will expire so reads can drop it from the
-- indexes (Redis expiry does not touch sorted sets).
local function slide(ttl, now)
  for _, k in ipairs(SESSION_KEYS) do
    if ttl > 0 then
      redis.call('EXPIRE', k, ttl)
    else
      redis.call('PERSIST', k)
    end
  end
  if ttl > 0 then
    redis.call('ZADD', K_EXPIRY, now + ttl * 1000000, GID)
  else
    redis.call('ZADD', K_EXPIRY, '+inf', GID)
  end
end

-- Metadata indexes -----------------------------------------------------------
-- A session's metadata (record field 'metadata', a flat JSON string map) is
-- indexed per (key, value) in two sorted sets scored by last activity, like
-- the status indexes: the user's (members session_id) and the bucket's
-- across users (members "<u>:<s>"). Their names follow the record key's tag
-- (redisstore/keys_registry.go builds the same names):
--   agent_session_meta:<tag><u>:<key>=<value>
--   agent_session_meta_global:<tag><key>=<value>
-- Keys are [A-Za-z0-9_.-], so the first '=' ends the key.

local META_TAG = string.sub(K_RECORD, #'agent_session_record:' + 1, #K_RECORD - #GID)

-- The session's state object (registry module), a string beside the record,
-- is one of the session's own keys: slid, persisted and deleted with them.
-- The user's state object (registry module), a user-level key in the
-- user's slot: every slide of any of the user's sessions extends it.
local K_USER_STATE = 'agent_user_state:' .. META_TAG .. ARGV[3]

-- The session's other own keys, derived from the record's tag (so they
-- share the session's slot on Cluster): its context blocks (a hash label
-- -> block), its frozen system prompt (a hash) and its memory of tool calls
-- (a hash), of the blocks module (redisstore/keys_blocks.go); and its
-- messages, of the messages module (redisstore/keys_messages.go):
--   K_MSGS    agent_session_msgs:<tag><u>:<s>         hash id -> message JSON
--   K_MTREE   agent_session_msg_tree:<tag><u>:<s>     hash id -> tree node
--   K_MKIDS   agent_session_msg_children:<tag><u>:<s> zset, lex: children
--   K_MORDER  agent_session_msg_order:<tag><u>:<s>    zset id -> append seq
--   K_MKEYS   agent_session_msg_keys:<tag><u>:<s>     hash Idempotency-Key ring
--   K_MCOMP   agent_session_compactions:<tag><u>:<s>  hash: compactions in force
--   K_SDOCS   agent_search_docs:<tag><u>:<s>          hash: the session's indexed messages
local K_STATE, K_BLOCKS, K_PROMPT, K_TOOL_CALLS
local K_MSGS, K_MTREE, K_MKIDS, K_MORDER, K_MKEYS, K_MCOMP, K_SDOCS

-- own_keys derives the session's keys that are not in KEYS from the
-- current GID and lists every own key in SESSION_KEYS (again after a
-- retarget to another session of the user).
local function own_keys()
  local id = META_TAG .. GID
  K_STATE = 'agent_session_state:' .. id
  K_BLOCKS = 'agent_session_blocks:' .. id
  K_PROMPT = 'agent_session_prompt:' .. id
  K_TOOL_CALLS = 'agent_session_tool_calls:' .. id
  K_MSGS = 'agent_session_msgs:' .. id
  K_MTREE = 'agent_session_msg_tree:' .. id
  K_MKIDS = 'agent_session_msg_children:' .. id
  K_MORDER = 'agent_session_msg_order:' .. id
  K_MKEYS = 'agent_session_msg_keys:' .. id
  K_MCOMP = 'agent_session_compactions:' .. id
  K_SDOCS = 'agent_search_docs:' .. id
  SESSION_KEYS = { K_ENTRIES, K_TRACES, K_CONTEXT, K_RECORD, K_INDEX, K_USAGE,
    K_STATE, K_BLOCKS, K_PROMPT, K_TOOL_CALLS,
    K_MSGS, K_MTREE, K_MKIDS, K_MORDER, K_MKEYS, K_MCOMP, K_SDOCS }
end
own_keys()

-- retarget points the session variables at session sid of the same user:
-- every session key ends in "<u>:<s>", and the user's indexes, the bucket's
-- shards and the tag are the same for all of them, so every key stays in
-- the user's slot on Redis Cluster (start-or-reuse, fork, split).
local function retarget(sid)
  local cut = #K_RECORD - #SID
  local function key(k) return string.sub(k, 1, #k - #SID) .. sid end
  K_ENTRIES, K_TRACES, K_CONTEXT = key(K_ENTRIES), key(K_TRACES), key(K_CONTEXT)
  K_RECORD, K_INDEX, K_USAGE = string.sub(K_RECORD, 1, cut) .. sid, key(K_INDEX), key(K_USAGE)
  SID, GID = sid, ARGV[3] .. ':' .. sid
  own_keys()
end

local function meta_keys(k, v)
  return 'agent_session_meta:' .. META_TAG .. ARGV[3] .. ':' .. k .. '=' .. v,
    'agent_session_meta_global:' .. META_TAG .. k .. '=' .. v
end

-- meta_checks returns the {key, 'zset'} pairs of guard for the metadata
-- indexes of the pairs of meta (JSON text, or nil/false: none; text that is
-- no flat string map, written by hand, has no index either).
meta_checks = function(meta)
  local out = {}
  if not meta or meta == '' or meta == '{}' then return out end
  local ok, m = pcall(cjson.decode, meta)
  if not ok or type(m) ~= 'table' then return out end
  for k, v in pairs(m) do
    if type(k) == 'string' and type(v) == 'string' then
      local uk, gk = meta_keys(k, v)
      out[#out + 1] = { uk, 'zset' }
      out[#out + 1] = { gk, 'zset' }
    end
  end
  return out
end

-- meta_expire gives key at least ttl seconds to live (0 = persist): a
-- metadata index lives as long as the longest-lived session it holds. p is
-- the key's PTTL before this write added to it (-2: the write created it).
-- A key without expiry keeps none: a session without expiry (PUT .../ttl
-- 0) holds it, and a TTL set now would expire it under that session. (Once
-- that session gets a TTL again the key stays without one until its
-- members are gone: bounded by them, like the status indexes.)
local function meta_expire(key, ttl, p)
  if ttl == 0 then
    redis.call('PERSIST', key)
  elseif p == -2 or (p >= 0 and p < ttl * 1000) then
    redis.call('EXPIRE', key, ttl)
  end
end

-- meta_index files the session under every pair of meta (JSON text, or
-- nil) with score; ttl (or nil: leave the expiry alone) as meta_expire's.
local function meta_index(meta, score, ttl)
  if not meta or meta == '' or meta == '{}' then return end
  for k, v in pairs(cjson.decode(meta)) do
    local uk, gk = meta_keys(k, v)
    local pu, pg
    if ttl then pu, pg = redis.call('PTTL', uk), redis.call('PTTL', gk) end
    redis.call('ZADD', uk, score, SID)
    redis.call('ZADD', gk, score, GID)
    if ttl then
      meta_expire(uk, ttl, pu)
      meta_expire(gk, ttl, pg)
    end
  end
end

-- meta_unindex removes the session from the indexes of the pairs of meta
-- (JSON text or nil) that keep (a table, or nil) does not hold.
local function meta_unindex(meta, keep)
  if not meta or meta == '' or meta == '{}' then return end
  for k, v in pairs(cjson.decode(meta)) do
    if not keep or keep[k] ~= v then
      local uk, gk = meta_keys(k, v)
      redis.call('ZREM', uk, SID)
      redis.call('ZREM', gk, GID)
    end
  end
end

-- session_exists reports whether any key of the session exists.
local function session_exists()
  return redis.call('EXISTS', K_ENTRIES, K_TRACES, K_CONTEXT, K_RECORD) > 0
end

-- iso_time_us reads an ISO 8601 time (Python isoformat: with or without
-- fraction and offset; no offset is UTC, as Cognee writes utcnow()) as µs
-- since the epoch, or nil; entry_time_us the "time" of a stored Q&A entry.
local function iso_time_us(text)
  local y, mo, d, h, mi, sec, rest = string.match(text,
    '^(%d%d%d%d)%-(%d%d)%-(%d%d)[T ](%d%d):(%d%d):(%d%d)(.*)$')
  if not y then return nil end
  local frac, off = string.match(rest, '^%.(%d+)(.*)$')
  if not frac then frac, off = '', rest end
  local offset = 0
  if off ~= '' and off ~= 'Z' then
    local sign, oh, om = string.match(off, '^([+-])(%d%d):?(%d%d)$')
    if not sign then return nil end
    offset = (tonumber(oh) * 60 + tonumber(om)) * 60
    if sign == '-' then offset = -offset end
  end
  y, mo = tonumber(y), tonumber(mo)
  if mo <= 2 then y = y - 1 end -- days from the civil date (March-based years)
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + tonumber(d) - 1
  local days = era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  local secs = days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec) - offset
  return secs * 1000000 + tonumber(string.sub(frac .. '000000', 1, 6))
end

local function entry_time_us(el)
  local at = string.find(el, '"time"', 1, true)
  if not at then return nil end
  local text = string.match(el, '^%s*:%s*"([^"]*)"', at + 6)
  return text and iso_time_us(text)
end

-- started_at_of is a new record's started_at (µs, as a string): the time
-- of the session's first entry when another writer (Cognee) made the list
-- before this first write of ours, else now. One LINDEX, never a scan.
local function started_at_of(now, own_first)
  if not own_first then
    local first = redis.call('LINDEX', K_ENTRIES, 0)
    local t = first and entry_time_us(first)
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
-- then at most a minute short of exact, never half-applied. A write that created a key (force), started
-- the session or changed its status always slides.
--   moved: the write changed the status (ended the session)
--   force: the write created a key of the session, or changed its TTL
--   count: the entries list's length, when the caller knows it
--   own_first: the entries list's first element is this write's (a new
--     record then starts now, not at the first entry's time)
-- Returns the status and whether this write started the session.
local function finish_write(moved, force, count, own_first)
  local now = now_us()
  local n = string.format('%d', now) -- tostring would round to 14 digits
  local rec = redis.call('HMGET', K_RECORD, 'status', 'ttl_seconds', 'slid_at', 'metadata')
  local status, started = rec[1], false
  local ttl = DEFAULT_TTL
  if rec[2] then ttl = tonumber(rec[2]) end
  count = count or redis.call('LLEN', K_ENTRIES)
  local due = force or moved or not status or not rec[3]
  if not due and ttl > 0 then
    local every = math.min(SLIDE_EVERY_MAX, math.floor(ttl / 1000)) * 1000000
    due = now - tonumber(rec[3]) >= every
  end
  local fields = { 'last_activity_at', n, 'entry_count', count }
  if not status then
    status, started = 'running', true
    fields[#fields + 1], fields[#fields + 2] = 'status', status
    fields[#fields + 1], fields[#fields + 2] = 'started_at', started_at_of(now, own_first)
  end
  if due then
    fields[#fields + 1], fields[#fields + 2] = 'slid_at', n
  end
  redis.call('HSET', K_RECORD, unpack(fields))
  index(status, now, started or moved)
  meta_index(rec[4], now, due and ttl or nil)
  if due then
    slide(ttl, now)
    -- the user's state lives as long as the user's sessions are written
    meta_expire(K_USER_STATE, ttl, redis.call('PTTL', K_USER_STATE))
  end
  return status, started
end

-- stored_flag is what a storing script answers: 2 when the write started the
-- session, else 1 (0 is "already there, nothing written").
local function stored_flag(started)
  if started then return 2 end
  return 1
end

-- Checks before the first write ----------------------------------------------
-- Redis does not roll back a script that fails half-way, so a storing script
-- makes every check before its first write. These helpers find what would
-- make a later command fail: a key of the wrong type (someone SET a hash
-- name as a string), a record field finish_write reads as a number that is
-- not one. Each returns nil, or a message naming the key and what is wrong.

-- key_type is TYPE's answer as a string ('none' for a missing key).
local function key_type(k)
  local t = redis.call('TYPE', k)
  if type(t) == 'table' then t = t.ok end
  return t
end

-- check_type: key k is missing or of type want.
local function check_type(k, want)
  local t = key_type(k)
  if t ~= 'none' and t ~= want then
    return string.format('Redis key %s holds a %s, not a %s', k, t, want)
  end
  return nil
end

-- check_finish: finish_write (and unindex) cannot fail on these keys.
--   rec: {status=, ttl_seconds=, slid_at=} of the record when the caller has
--     read them (from a hash it checked), else nil: then read here (with
--     metadata=, whose indexes finish_write scores: read here when absent)
--   moved: the write changes the status (all three index sets are written)
--   entries_read: the caller has read the entries list (its type is right)
local function check_finish(rec, moved, entries_read)
  local bad
  if not rec then
    bad = check_type(K_RECORD, 'hash')
    if bad then return bad end
    local v = redis.call('HMGET', K_RECORD, 'status', 'ttl_seconds', 'slid_at', 'metadata')
    rec = { status = v[1], ttl_seconds = v[2], slid_at = v[3], metadata = v[4] }
  end
  local meta = rec.metadata
  if meta == nil then meta = redis.call('HGET', K_RECORD, 'metadata') end
  for _, c in ipairs(meta_checks(meta)) do
    bad = check_type(c[1], c[2])
    if bad then return bad end
  end
  for _, f in ipairs({ 'ttl_seconds', 'slid_at' }) do
    if rec[f] and not string.match(rec[f], '^%-?%d+$') then
      return string.format('field %s of Redis key %s is not an integer', f, K_RECORD)
    end
  end
  if rec.status and not K_USER[rec.status] then
    return string.format('field status of Redis key %s is not a status', K_RECORD)
  end
  bad = (not entries_read and check_type(K_ENTRIES, 'list')) or check_type(K_EXPIRY, 'zset')
  if bad then return bad end
  -- A session that keeps its status is only scored in that status's sets.
  local statuses = STATUSES
  if rec.status and not moved then statuses = { rec.status } end
  for _, st in ipairs(statuses) do
    bad = check_type(K_USER[st], 'zset') or check_type(K_GLOBAL[st], 'zset')
    if bad then return bad end
  end
  return nil
end
