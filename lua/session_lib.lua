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
--   ARGV[2] SESSION_MAX_ENTRIES (0 = unbounded), optionally followed by
--           ':' and SESSION_EVENTS_MAXLEN ("0:1000"; 1000 when absent)
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
-- Top-level locals: miniredis runs these scripts with gopher-lua, whose
-- limit on a chunk's registers the messages chain (this prelude, then
-- messages_lib.lua, then a script) is close to ("register overflow"; the
-- messages suite on miniredis fails first). A new top-level helper should
-- replace one, or live in a script or a function.
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
--
-- Events. Every write of a session, in the same script as the write, calls
--   emit(type, kind, id, data_json)
-- once it has made all its checks (so a refused or repeated write emits
-- nothing): it XADDs {t = type, d = data} to the session's event stream
-- agent_session_events:<tag><u>:<s> (K_EVENTS, one of the session's own
-- keys: slid, persisted and deleted with them) with MAXLEN ~
-- SESSION_EVENTS_MAXLEN, and PUBLISHes '' on the stream's own channel
-- sidecar:events:<stream key> so its readers wake up. data_json is the
-- stored object's JSON; past 8 KiB the event carries
-- {"id": id, "kind": kind, "truncated": true} instead (kind: entry, message,
-- trace, context, block, state, custom; id: the object's id or nil). It
-- returns the event id ("<ms>-<seq>", the SSE id). Types: entry_appended,
-- entry_updated, entry_deleted, feedback, message_appended, message_updated,
-- message_deleted, trace_appended, context_changed, usage, status,
-- block_changed, state_changed, session_updated, ttl_changed, compaction,
-- compaction_suggested, abort, abort_cleared, deleted, and x-<name> custom
-- events. emit_user(type, kind, id, data_json) does the same on the user's
-- stream agent_user_events:<tag><u> (user-level changes such as user
-- blocks), which lives SESSION_TTL_SECONDS from its last event.
-- clear_abort() removes the record's abort_requested_at (a status change,
-- the next user message): call it before finish_write.

--! per-call
if redis.replicate_commands then redis.replicate_commands() end

local K_ENTRIES, K_TRACES, K_CONTEXT, K_RECORD, K_INDEX, K_USAGE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local SESSION_KEYS = { K_ENTRIES, K_TRACES, K_CONTEXT, K_RECORD, K_INDEX, K_USAGE }
local K_USER = { running = KEYS[7], completed = KEYS[8], failed = KEYS[9] }
local K_GLOBAL = { running = KEYS[10], completed = KEYS[11], failed = KEYS[12] }
local K_EXPIRY, K_TOTALS, K_BY_MODEL = KEYS[13], KEYS[14], KEYS[15]
local DEFAULT_TTL = tonumber(ARGV[1])
local MAX_ENTRIES = tonumber(string.match(ARGV[2], '^%-?%d+'))
local EVENTS_MAXLEN = tonumber(string.match(ARGV[2], ':(%d+)$') or '1000')
local SID = ARGV[4]                -- member of the user's index sets
local GID = ARGV[3] .. ':' .. ARGV[4] -- member of the global index sets
local TOMBSTONE = '\0sidecar:deleted'
-- the session's event stream (see Events above; tag as the record's)
local K_EVENTS = 'agent_session_events:' .. string.sub(K_RECORD, #'agent_session_record:' + 1, #K_RECORD - #GID) .. GID
--! end per-call

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
-- Q&A entry qa_id comes before the only fields that could nest one. An
-- 'id' that is the object's first field is read in place too. Other
-- cases ('id' later in free-form context objects, which may nest an "id")
-- and ids with escapes take the full top-level scan.
local function id_of(s, key)
  if key == 'qa_id' then
    -- plain find (no pattern backtracking over the whole entry), then an
    -- anchored match at that spot
    local at = string.find(s, '"qa_id"', 1, true)
    if not at then return nil end
    local id = string.match(s, '^%s*:%s*"([^"\\]*)"', at + 7)
    if id then return id end
  elseif key == 'id' then
    -- a context entry's id is usually its first field (the sidecar puts it
    -- there): read it without scanning the object
    local id = string.match(s, '^%s*{%s*"id"%s*:%s*"([^"\\]*)"')
    if id then return id end
  end
  if not string.find(s, '"' .. key .. '"', 1, true) then return nil end
  local ok, raw = pcall(field_raw, s, key)
  if ok and raw and string.byte(raw, 1) == 34 then return cjson.decode(raw) end
  return nil
end

-- set_fields_quick is set_fields for the usual edit (feedback on a Q&A
-- entry) at a fraction of the cost: on a flat object (no backslash, no
-- nested '{' or '['), whose members each match one pattern, with every key
-- of updates present and named once in updates, it walks the members with a
-- few matches each (no table per member) and splices the values in. It
-- accepts exactly what object_fields would and finds the same spans (the
-- first member of each key); nil for anything else: the caller scans.
local function set_fields_quick(s, updates)
  local want, n = {}, 0
  for _, u in ipairs(updates) do
    if want[u[1]] then return nil end
    want[u[1]], n = u[2], n + 1
  end
  local open = skip_ws(s, 1)
  if string.byte(s, open) ~= 123 or string.find(s, '\\', 1, true) or string.find(s, '[', 1, true)
      or string.find(s, '{', open + 1, true) then
    return nil
  end
  local i = skip_ws(s, open + 1)
  local out, pos = {}, 1
  while true do
    local key, vs = string.match(s, '^"([^"]*)"[ \t\r\n]*:[ \t\r\n]*()', i)
    if not key then return nil end
    local ve = string.match(s, '^"[^"]*"()', vs) or string.match(s, '^[^,}%]%s"]+()', vs)
    if not ve then return nil end
    local v = want[key]
    if v then
      out[#out + 1] = string.sub(s, pos, vs - 1)
      out[#out + 1] = v
      pos, want[key], n = ve, nil, n - 1
    end
    local b
    b, i = string.match(s, '^[ \t\r\n]*([,}])[ \t\r\n]*()', ve)
    if not b then return nil end
    if b == '}' then break end
  end
  if n > 0 then return nil end
  out[#out + 1] = string.sub(s, pos)
  return table.concat(out)
end

-- set_fields (set_fields_quick, else set_fields_scan) returns s with the
-- top-level fields in updates (an array of {key, raw_json}) replaced in
-- place, or appended before the closing brace when absent. Untouched fields keep their exact bytes. A key named twice in
-- updates is set once, to its last value, where Python's json.loads would
-- put it (two splices into one span would write invalid JSON).
local function set_fields_scan(s, updates)
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

local function set_fields(s, updates)
  return set_fields_quick(s, updates) or set_fields_scan(s, updates)
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

-- The id indexes -------------------------------------------------------------
-- Two lists have an id index, a hash the scripts that write them keep:
--   'qa'      the entries list (KEYS[1]) by qa_id: K_INDEX
--   'context' the context list (KEYS[3]) by "id": K_CTX_INDEX,
--             agent_session_context_index:<tag><u>:<s>, derived from K_INDEX
-- An index maps id -> absolute sequence number (position + '#head', the
-- number of elements trimmed from the left since the index was made) and
-- describes a prefix of the list: '#len' = L, the positions [0, L) it
-- covers, and '#first' and '#last' the fingerprints of the elements at 0
-- and L-1. It is valid while the list still starts with that prefix (at
-- least L long, the same fingerprints at 0 and L-1), and complete when L
-- is the list's length: then an id it lacks is absent from the list.
--
-- Why a valid index can be trusted: another writer (Cognee) appends
-- (RPUSH), updates an element in place (LSET, same entry, same position)
-- and deletes by rewriting the list (DEL, then RPUSH of the survivors).
-- Deleting an element of the prefix makes the list shorter than L or puts
-- a later element, or a new one, at L-1; a Q&A entry's fingerprint is its
-- qa_id and its "time", and every entry Cognee creates has a new time, so
-- the fingerprint at L-1 changes. A context entry has no time: its
-- fingerprint is its bytes, so an update in place of the first or last
-- one by another writer also reads as a rewrite (a rebuild, never a wrong
-- answer); only a writer that deletes entries and then re-creates the
-- last one byte for byte, and the first unchanged, goes unseen.
--
-- When the list grew past L (another writer appended), the index is
-- extended over the new elements; when it is not valid (a rewrite), it is
-- dropped and made again from position 0. Either way one script indexes at
-- most INDEX_STEP elements and about INDEX_STEP_BYTES, so no script does
-- work that grows with the list: a script that needs the index complete
-- and finds it is not answers {'index_build', which} before its first
-- write, and the caller runs session_index_build.lua (one bounded step
-- each) until the index is complete, then runs the script again. A hit is
-- always checked against the element it points at, so a partial index
-- answers every id it holds.

-- the context index, one of the session's own keys (own_keys below)
--! per-call
local K_CTX_INDEX = 'agent_session_context_index:' .. string.sub(K_INDEX, #'agent_session_qa_index:' + 1)
--! end per-call

-- INDEX_STEP bounds the elements one script indexes or renumbers, and
-- INDEX_STEP_BYTES (about) the bytes it reads for that; INDEX_PAGE is the
-- first LRANGE's size, later ones sized to about 256 KiB.
local INDEX_STEP, INDEX_STEP_BYTES, INDEX_PAGE = 256, 1048576, 16

-- key_type is TYPE's answer as a string ('none' for a missing key).
local function key_type(k)
  local t = redis.call('TYPE', k)
  if type(t) == 'table' then t = t.ok end
  return t
end

-- type_refusal is what a script answers when the command by which it
-- checks key's type before its first write (a pcall: locate's reads, the
-- first write's XADD; guard's {key, type, 'self'}) failed with err:
-- guard's refusal ("KEYTYPE <key> <type> <want>") for a key of another
-- type, and any other error (OOM, READONLY, NOPERM) as Redis gave it.
local function type_refusal(key, want, err)
  if string.sub(err.err or '', 1, 9) ~= 'WRONGTYPE' then return err end
  return redis.error_reply('KEYTYPE ' .. key .. ' ' .. key_type(key) .. ' ' .. want)
end

-- index_keys returns the list, index and id field of index which.
local function index_keys(which)
  if which == 'qa' then return K_ENTRIES, K_INDEX, 'qa_id' end
  return K_CONTEXT, K_CTX_INDEX, 'id'
end

-- fingerprint is what identifies element el (nil: '') of list which: a Q&A
-- entry's qa_id and time (neither changes on update), a context entry's
-- bytes (a long one by its length, head and tail).
local function fingerprint(which, el)
  if not el then return '' end
  if which == 'qa' then
    local t, at = '', string.find(el, '"time"', 1, true)
    if at then t = string.match(el, '^%s*:%s*"([^"]*)"', at + 6) or '' end
    return (id_of(el, 'qa_id') or '') .. ' ' .. t
  end
  if #el > 8192 then el = #el .. string.sub(el, 1, 4096) .. string.sub(el, -4096) end
  return redis.sha1hex(el)
end

-- read_range reads elements [from, to] of list, a page at a time, until it
-- holds INDEX_STEP elements or about INDEX_STEP_BYTES: the elements read
-- (fewer than asked when the budget ran out).
local function read_range(list, from, to)
  local out, bytes, per = {}, 0, INDEX_PAGE
  while from <= to and #out < INDEX_STEP and bytes < INDEX_STEP_BYTES do
    if #out > 0 then per = math.floor(262144 / math.max(1, math.floor(bytes / #out))) end
    local want = math.max(1, math.min(per, INDEX_STEP - #out, to - from + 1))
    local page = redis.call('LRANGE', list, from, from + want - 1)
    for _, el in ipairs(page) do
      out[#out + 1] = el
      bytes = bytes + #el
    end
    if #page < want then break end
    from = from + want
  end
  return out
end

local function hset_chunks(key, args)
  for i = 1, #args, 1000 do
    local chunk = {}
    for j = i, math.min(i + 999, #args) do chunk[#chunk + 1] = args[j] end
    redis.call('HSET', key, unpack(chunk))
  end
end

-- index_put maps the ids of els, the elements from position pos on, to
-- their sequence numbers (base + position).
local function index_put(which, els, pos, base)
  local _, index, idkey = index_keys(which)
  local args = {}
  for i, el in ipairs(els) do
    local id = id_of(el, idkey)
    if id then
      args[#args + 1] = id
      args[#args + 1] = string.format('%d', base + pos + i - 1)
    end
  end
  if #args > 0 then hset_chunks(index, args) end
end

-- index_sync makes one bounded step towards an index of list which that
-- covers its llen (> 0) elements: checks it is valid (else drops it), then
-- indexes at most one step of the elements it does not cover. Returns
-- whether the index is complete now and, when it was complete and valid as
-- read (no step taken), what it read: {'#len', '#last', '#first', '#head',
-- id} (id's field when id is given); or guard's refusal when the index is
-- not a hash.
local function index_sync(which, llen, id)
  local list, index = index_keys(which)
  local m
  if id then
    m = redis.pcall('HMGET', index, '#len', '#last', '#first', '#head', id)
  else
    m = redis.pcall('HMGET', index, '#len', '#last', '#first', '#head')
  end
  if m.err then return type_refusal(index, 'hash', m) end
  local covered, head = tonumber(m[1] or ''), tonumber(m[4] or '0')
  if not covered or covered < 1 or covered > llen or not head
      or fingerprint(which, redis.call('LINDEX', list, covered == llen and -1 or covered - 1)) ~= m[2]
      or fingerprint(which, redis.call('LINDEX', list, 0)) ~= m[3] then
    -- not the prefix it describes (or none): made again from position 0;
    -- UNLINK frees a big hash off Redis's main thread
    if redis.call('EXISTS', index) == 1 then redis.call('UNLINK', index) end
    covered, head = 0, 0
  end
  if covered == llen then return true, m end
  local els = read_range(list, covered, llen - 1)
  index_put(which, els, covered, head)
  local n = covered + #els
  local meta = { '#len', tostring(n), '#last', fingerprint(which, els[#els]) }
  if covered == 0 then
    meta[#meta + 1], meta[#meta + 2] = '#first', fingerprint(which, els[1])
    meta[#meta + 1], meta[#meta + 2] = '#head', '0'
  end
  redis.call('HSET', index, unpack(meta))
  if covered == 0 then
    -- a new index must not outlive its list, whether or not this script
    -- slides the session's TTLs
    local pttl = redis.call('PTTL', list)
    if pttl > 0 then redis.call('PEXPIRE', index, pttl) end
  end
  return n == llen
end

-- needs_build is the answer of a script that needs index which complete
-- and could not make it so in one step; it has written nothing but index
-- steps.
local function needs_build(which)
  return { 'index_build', which }
end

-- locate finds the element whose id is id in list which: returns its
-- position (0-based), bytes and the list's length; nil, nil, the length
-- and the index's {'#len', '#last', '#first', '#head'} (when read before
-- any step, else nil) when the list holds no such element;
-- needs_build(which) when that cannot be told within one step; or guard's
-- refusal when the list or its index has another type (read before any
-- write: a script that locates before its first write need not ask guard
-- about them). llen is the list's length when the caller has it.
local function locate(which, id, llen)
  local list, index, idkey = index_keys(which)
  if not llen then
    llen = redis.pcall('LLEN', list)
    if type(llen) == 'table' then return type_refusal(list, 'list', llen) end
  end
  if llen == 0 then
    -- another writer emptied the list: no index outlives it
    if redis.call('EXISTS', index) == 1 then
      local n = redis.pcall('HLEN', index)
      if type(n) == 'table' then return type_refusal(index, 'hash', n) end
      redis.call('DEL', index)
    end
    return nil, nil, 0
  end
  local complete, m = index_sync(which, llen, id)
  if type(complete) == 'table' then return complete end
  local at, head, covered
  if m then
    at, head, covered = m[5], m[4], m[1]
  else
    local r = redis.call('HMGET', index, id, '#head', '#len')
    at, head, covered = r[1], r[2], r[3]
  end
  local pos = at and tonumber(at) - tonumber(head or '0')
  if pos and pos >= 0 and pos < tonumber(covered or '0') then
    local el = redis.call('LINDEX', list, pos)
    if el and id_of(el, idkey) == id then return pos, el, llen end
    if complete then
      -- a complete, valid index pointing at another element: another
      -- writer's update landed on a shifted position; made again
      redis.call('UNLINK', index)
      return needs_build(which)
    end
  end
  if complete then return nil, nil, llen, m end
  return needs_build(which)
end

-- index_append records that the element el with id id was just pushed as
-- the list's element newlen (1-based), after locate found the index
-- complete (or the list empty: then the index is made anew). head is the
-- index's '#head' when the caller has it.
local function index_append(which, id, el, newlen, head)
  local _, index = index_keys(which)
  if newlen == 1 then
    head = 0
    redis.call('DEL', index)
  elseif not head then
    head = tonumber(redis.call('HGET', index, '#head') or '0')
  end
  local fp = fingerprint(which, el)
  local args = { id, string.format('%d', head + newlen - 1), '#len', tostring(newlen), '#last', fp }
  if newlen == 1 then
    args[#args + 1], args[#args + 2] = '#first', fp
    args[#args + 1], args[#args + 2] = '#head', '0'
  end
  redis.call('HSET', index, unpack(args))
end

-- index_touch keeps the fingerprints current after the element at pos of
-- list which was replaced by el (LSET); llen is the list's length.
local function index_touch(which, pos, el, llen)
  local _, index = index_keys(which)
  local covered = tonumber(redis.call('HGET', index, '#len') or '')
  if not covered then return end
  if pos == 0 then redis.call('HSET', index, '#first', fingerprint(which, el)) end
  if pos == covered - 1 then redis.call('HSET', index, '#last', fingerprint(which, el)) end
end

-- trim keeps about the newest MAX_ENTRIES of list key (0 = unbounded) in
-- batches: a list longer than 1.25 x MAX_ENTRIES is cut back to the newest
-- MAX_ENTRIES, so the positions of the elements shift once per quarter of
-- MAX_ENTRIES appends, not on every append (Cognee updates an entry with
-- LSET at the position it read). which names the list's index, if it has
-- one: the trimmed ids leave it when they fit in one step, else the index
-- is dropped (later calls make it again, a step at a time). llen is the
-- list's length when the caller knows it. Returns the number removed, and
-- the removed elements when it read them (for the index), else nil.
local function trim(key, llen, which)
  if MAX_ENTRIES <= 0 then return 0 end
  llen = llen or redis.call('LLEN', key)
  if llen * 4 <= MAX_ENTRIES * 5 then return 0 end
  local k = llen - MAX_ENTRIES
  if which then
    local _, index, idkey = index_keys(which)
    local m = redis.call('HMGET', index, '#len', '#head')
    local covered, head = tonumber(m[1] or ''), tonumber(m[2] or '0')
    local removed = covered and covered > k and read_range(key, 0, k - 1) or {}
    if #removed == k then
      local ids = {}
      for _, el in ipairs(removed) do
        local id = id_of(el, idkey)
        if id then ids[#ids + 1] = id end
      end
      for i = 1, #ids, 1000 do
        redis.call('HDEL', index, unpack(ids, i, math.min(i + 999, #ids)))
      end
      redis.call('LTRIM', key, k, -1)
      redis.call('HSET', index, '#head', string.format('%d', head + k), '#len', tostring(covered - k),
        '#first', fingerprint(which, redis.call('LINDEX', key, 0)))
      return k, removed
    end
    redis.call('UNLINK', index)
  end
  redis.call('LTRIM', key, k, -1)
  return k
end

-- remove_at deletes the element el at pos of list which (llen elements
-- long), found there by locate, and keeps its index: the elements on the shorter
-- side of pos within the covered prefix are renumbered when they fit in
-- one step, else the index is dropped (later calls make it again, a step
-- at a time). LREM scans from the nearer end.
local function remove_at(which, pos, el, llen)
  local list, index, idkey = index_keys(which)
  local m = redis.call('HMGET', index, '#len', '#head')
  local covered, head = tonumber(m[1] or ''), tonumber(m[2] or '0')
  local renumber, from, to = nil, 0, -1
  if covered and pos < covered and pos > 0 and pos < covered - 1 then
    if covered - 1 - pos <= pos then
      from, to = pos + 1, covered - 1 -- these move up by one
    else
      from, to = 0, pos - 1 -- these keep their place; the head moves
    end
    renumber = read_range(list, from, to)
    if #renumber ~= to - from + 1 then renumber = nil end
  end
  redis.call('LSET', list, pos, TOMBSTONE)
  redis.call('LREM', list, (pos * 2 < llen) and 1 or -1, TOMBSTONE)
  if not covered or pos >= covered then return end -- no index, or nothing moved in its prefix
  if llen == 1 or covered == 1 then -- it covered the removed element alone
    redis.call('UNLINK', index)
    return
  end
  local id = id_of(el, idkey)
  if id and tonumber(redis.call('HGET', index, id) or '') == head + pos then redis.call('HDEL', index, id) end
  if pos == 0 then
    redis.call('HSET', index, '#head', string.format('%d', head + 1), '#len', tostring(covered - 1),
      '#first', fingerprint(which, redis.call('LINDEX', list, 0)))
  elseif pos == covered - 1 then
    redis.call('HSET', index, '#len', tostring(covered - 1),
      '#last', fingerprint(which, redis.call('LINDEX', list, covered - 2)))
  elseif not renumber then
    redis.call('UNLINK', index)
  elseif from > 0 then
    index_put(which, renumber, pos, head)
    redis.call('HSET', index, '#len', tostring(covered - 1))
  else
    index_put(which, renumber, 0, head + 1)
    redis.call('HSET', index, '#head', string.format('%d', head + 1), '#len', tostring(covered - 1))
  end
end

-- Key types ----------------------------------------------------------------

-- guard returns an error reply naming the first key the script would write
-- that exists with another type (another program wrote it), or a record
-- field finish_write reads that is not what it should be (BADKEY), or nil. Every
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
-- record's pairs (which finish_write scores) are checked too. A pair
-- {key, type, 'self'} is one the script checks itself: its first command
-- on the key refuses another type before anything is written (locate's
-- LLEN and HMGET, emit's XADD as the first write): guard asks no TYPE of
-- it. Each key is asked once.
--
-- With nil, guard returns the record's fields as it read them
-- ({status, ttl_seconds, slid_at, metadata}, finish_write's order; nil in
-- mode 'indexes'), for a script that does not change them before
-- finish_write to pass on.
local meta_checks -- (meta) -> {key, 'zset'} pairs: defined with meta_keys below
local function guard(mode, ...)
  local checks = { ... }
  local status, read
  if mode ~= 'indexes' then
    local rec = redis.pcall('HMGET', K_RECORD, 'status', 'ttl_seconds', 'slid_at', 'metadata')
    if rec.err then
      checks[#checks + 1] = { K_RECORD, 'hash' }
    else
      status = rec[1]
      -- the record fields finish_write reads as a status and as numbers
      if status and not K_USER[status] then
        return redis.error_reply('BADKEY field status of Redis key ' .. K_RECORD .. ' is not a status')
      end
      if rec[2] and not string.match(rec[2], '^%-?%d+$') then
        return redis.error_reply('BADKEY field ttl_seconds of Redis key ' .. K_RECORD .. ' is not an integer')
      end
      if rec[3] and not string.match(rec[3], '^%-?%d+$') then
        return redis.error_reply('BADKEY field slid_at of Redis key ' .. K_RECORD .. ' is not an integer')
      end
      if rec[4] then
        for _, c in ipairs(meta_checks(rec[4])) do checks[#checks + 1] = c end
      end
      read = rec
    end
    checks[#checks + 1] = { K_ENTRIES, 'list' } -- finish_write counts it
  end
  if mode == 'keep' and status and K_USER[status] then
    checks[#checks + 1] = { K_USER[status], 'zset' }
    checks[#checks + 1] = { K_GLOBAL[status], 'zset' }
    checks[#checks + 1] = { K_EXPIRY, 'zset' }
  else
    for i = 7, 13 do checks[#checks + 1] = { KEYS[i], 'zset' } end
  end
  checks[#checks + 1] = { K_EVENTS, 'stream' }
  local asked = {}
  for _, c in ipairs(checks) do
    local k = c[1]
    if not asked[k] then
      asked[k] = true
      if c[3] ~= 'self' then
        local got = redis.call('TYPE', k)
        if type(got) == 'table' then got = got.ok end
        if got ~= 'none' and got ~= c[2] then
          return redis.error_reply('KEYTYPE ' .. k .. ' ' .. got .. ' ' .. c[2])
        end
      end
    end
  end
  return nil, read
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

--! per-call
local META_TAG = string.sub(K_RECORD, #'agent_session_record:' + 1, #K_RECORD - #GID)
--! end per-call

-- The session's state object (registry module), a string beside the record,
-- is one of the session's own keys: slid, persisted and deleted with them.
-- The user's state object (registry module), a user-level key in the
-- user's slot: every slide of any of the user's sessions extends it.
--! per-call
local K_USER_STATE = 'agent_user_state:' .. META_TAG .. ARGV[3]
--! end per-call
-- The user's search postings (a prefix: one zset per term) and statistics
-- ("Search index" below).
--! per-call
local SEARCH_PREFIX = 'agent_search:' .. META_TAG .. ARGV[3] .. ':'
local K_SSTATS = 'agent_search_stats:' .. META_TAG .. ARGV[3]
--! end per-call

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
-- and the session's indexed Q&A entries ("Search index" below):
--   K_EDOCS   agent_search_entry_docs:<tag><u>:<s>    hash
local K_STATE, K_BLOCKS, K_PROMPT, K_TOOL_CALLS, K_EKEYS
local K_MSGS, K_MTREE, K_MKIDS, K_MORDER, K_MKEYS, K_MCOMP, K_SDOCS, K_EDOCS

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
  K_EDOCS = 'agent_search_entry_docs:' .. id
  K_CTX_INDEX = 'agent_session_context_index:' .. id
  K_EVENTS = 'agent_session_events:' .. id
  K_EKEYS = 'agent_session_event_keys:' .. id
  SESSION_KEYS = { K_ENTRIES, K_TRACES, K_CONTEXT, K_RECORD, K_INDEX, K_USAGE, K_CTX_INDEX,
    K_STATE, K_BLOCKS, K_PROMPT, K_TOOL_CALLS,
    K_MSGS, K_MTREE, K_MKIDS, K_MORDER, K_MKEYS, K_MCOMP, K_SDOCS, K_EDOCS, K_EVENTS, K_EKEYS }
end
--! per-call
own_keys()
--! end per-call

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

-- Session events (see the header): the stream is one of the session's own
-- keys (own_keys); the user's stream is the user's alone.
--! per-call
local K_USER_EVENTS = 'agent_user_events:' .. META_TAG .. ARGV[3]
--! end per-call
local EVENTS_CHANNEL = 'sidecar:events:'
-- EVENT_DATA_MAX: an event's data past it is {id, kind, truncated: true}.
local EVENT_DATA_MAX = 8192
-- EVENTS_TOMBSTONE_SECONDS: how long a deleted session's stream keeps its
-- `deleted` event, so readers on every pod see it.
local EVENTS_TOMBSTONE_SECONDS = 300

-- event_data is data_json, or its stand-in past EVENT_DATA_MAX.
local function event_data(kind, id, data)
  if #data <= EVENT_DATA_MAX then return data end
  local idj = 'null'
  if id and id ~= '' then idj = cjson.encode(id) end
  return '{"id":' .. idj .. ',"kind":"' .. kind .. '","truncated":true}'
end

-- xadd appends one event to stream key and wakes the readers; returns its
-- id and whether the stream is new. NOMKSTREAM first: a stream that exists
-- (the usual case) costs one XADD, a new one a second.
local function xadd(key, typ, data, first)
  local id
  if first then
    id = redis.pcall('XADD', key, 'NOMKSTREAM', 'MAXLEN', '~', EVENTS_MAXLEN, '*', 't', typ, 'd', data)
    if type(id) == 'table' then return type_refusal(key, 'stream', id) end
  else
    id = redis.call('XADD', key, 'NOMKSTREAM', 'MAXLEN', '~', EVENTS_MAXLEN, '*', 't', typ, 'd', data)
  end
  local fresh = not id
  if fresh then id = redis.call('XADD', key, 'MAXLEN', '~', EVENTS_MAXLEN, '*', 't', typ, 'd', data) end
  -- a wake-up is best effort (readers re-read every heartbeat): a PUBLISH
  -- the ACL refuses must not fail a write whose commands already ran
  redis.pcall('PUBLISH', EVENTS_CHANNEL .. key, '')
  return id, fresh
end

-- session_ttl is the TTL the session's keys slide to: its own, else
-- SESSION_TTL_SECONDS (0 = no expiry).
local function session_ttl()
  local own = redis.pcall('HGET', K_RECORD, 'ttl_seconds')
  if type(own) == 'string' and string.match(own, '^%d+$') then return tonumber(own) end
  return DEFAULT_TTL
end

-- emit appends the write's event to the session's stream (see the header).
-- A stream it creates gets the session's TTL at once (a write that does not
-- slide would leave it without one until the next slide). first: this is
-- the script's first write, after every check but the stream's type (guard
-- got {K_EVENTS, 'stream', 'self'}): its XADD refuses a stream of another
-- type before anything is written, and emit returns guard's refusal (a
-- table) instead of the event id.
local function emit(typ, kind, id, data, first)
  local eid, fresh = xadd(K_EVENTS, typ, event_data(kind, id, data), first)
  if type(eid) == 'table' then return eid end
  if fresh then
    local ttl = session_ttl()
    if ttl > 0 then redis.call('EXPIRE', K_EVENTS, ttl) end
  end
  return eid
end

-- emit_user appends an event to the user's stream, which lives
-- SESSION_TTL_SECONDS from its last event (none when 0).
local function emit_user(typ, kind, id, data)
  local eid = xadd(K_USER_EVENTS, typ, event_data(kind, id, data))
  if DEFAULT_TTL > 0 then redis.call('EXPIRE', K_USER_EVENTS, DEFAULT_TTL) end
  return eid
end

-- user_events_refused is guard's refusal when the user's event stream
-- holds another type, else nil: a script that calls emit_user checks it
-- before its first write.
local function user_events_refused()
  local got = redis.call('TYPE', K_USER_EVENTS)
  if type(got) == 'table' then got = got.ok end
  if got ~= 'none' and got ~= 'stream' then
    return redis.error_reply('KEYTYPE ' .. K_USER_EVENTS .. ' ' .. got .. ' stream')
  end
  return nil
end

-- civil_date is the UTC calendar date (year, month, day) of unix time sec
-- (days_from_civil's inverse, exact for every date).
local function civil_date(sec)
  local z = math.floor(sec / 86400) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

-- iso_time formats µs since the epoch as RFC 3339 UTC with µs.
local function iso_time(us)
  local sec = math.floor(us / 1000000)
  local y, m, d = civil_date(sec)
  local rem = sec % 86400
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%06dZ', y, m, d,
    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60, us % 1000000)
end

-- RING_KEYS is how many Idempotency-Keys a key ring keeps (the newest).
local RING_KEYS = 1000

-- ring_get returns what Idempotency-Key key was stored with in ring hash
-- ring (ring_put), or nil.
local function ring_get(ring, key)
  local held = redis.call('HGET', ring, key)
  return held and string.match(held, '^(.*)\t%d+$') or held
end

-- ring_put stores key -> "value \t slot" in ring hash ring, which keeps
-- the RING_KEYS newest keys: field ' n' counts the keys stored, ' <n mod
-- RING_KEYS>' names the key stored n-th, which the next key of that slot
-- evicts unless that key was stored again in a later slot since (a
-- leading space cannot start a key). Returns whether it created the hash.
local function ring_put(ring, key, value)
  local kept = tonumber(redis.call('HGET', ring, ' n') or '0') or 0
  local n = string.format('%d', kept % RING_KEYS)
  local slot = ' ' .. n
  local evict = redis.call('HGET', ring, slot)
  if evict then
    local held = redis.call('HGET', ring, evict)
    local at = held and string.match(held, '\t(%d+)$')
    if held and (not at or at == n) then redis.call('HDEL', ring, evict) end
  end
  redis.call('HSET', ring, key, value .. '\t' .. n, slot, key, ' n', string.format('%d', kept + 1))
  return kept == 0
end

-- clear_abort removes a pending abort request (a status change, the next
-- user message); returns whether one was set.
local function clear_abort()
  return redis.call('HDEL', K_RECORD, 'abort_requested_at') == 1
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

-- META_PRUNE is how many of an index's least recently active members a
-- write that slides examines (meta_prune).
local META_PRUNE = 2

-- meta_prune drops from metadata index key up to META_PRUNE of its least
-- recently active members whose session has expired, as the expiry set
-- tells (no entry, or an expiry before now; the sweep removes the entries
-- of expired sessions), so members of expired sessions do not pile up in
-- an index that is written but seldom read: every sliding write of a
-- session in the index removes up to two, so they go at least as fast as
-- sessions join it. gid_of maps a member to its "<u>:<s>".
local function meta_prune(key, now, gid_of)
  for _, m in ipairs(redis.call('ZRANGE', key, 0, META_PRUNE - 1)) do
    local exp = redis.call('ZSCORE', K_EXPIRY, gid_of(m))
    if not exp or (tonumber(exp) or math.huge) < now then redis.call('ZREM', key, m) end
  end
end

-- meta_index files the session under every pair of meta (JSON text, or
-- nil) with score; ttl (or nil: leave the expiry alone) as meta_expire's.
-- With a ttl (a write that slides) it also prunes each index (meta_prune).
local function meta_index(meta, score, ttl)
  if not meta or meta == '' or meta == '{}' then return end
  local user_gid = function(m) return ARGV[3] .. ':' .. m end
  local same = function(m) return m end
  for k, v in pairs(cjson.decode(meta)) do
    local uk, gk = meta_keys(k, v)
    local pu, pg
    if ttl then
      pu, pg = redis.call('PTTL', uk), redis.call('PTTL', gk)
      meta_prune(uk, score, user_gid)
      meta_prune(gk, score, same)
    end
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
--   rec: the record as guard read it (its second answer), when the script
--     has not changed the record since (else nil: read here)
-- Returns the status and whether this write started the session.
local function finish_write(moved, force, count, own_first, rec)
  local now = now_us()
  local n = string.format('%d', now) -- tostring would round to 14 digits
  rec = rec or redis.call('HMGET', K_RECORD, 'status', 'ttl_seconds', 'slid_at', 'metadata')
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
    -- the user's state and search statistics live as long as the user's
    -- sessions are written
    meta_expire(K_USER_STATE, ttl, redis.call('PTTL', K_USER_STATE))
    local ps = redis.call('PTTL', K_SSTATS)
    if ps ~= -2 then meta_expire(K_SSTATS, ttl, ps) end
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
    or check_type(K_EVENTS, 'stream')
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

-- Search index ----------------------------------------------------------------
-- The relevance search index (package search) of the user's Q&A entries and
-- messages. The sidecar analyses text in Go (words folded and stemmed); a
-- script gets a document as spec "term tf term tf ..." (at most 256 terms),
-- its length in words and a plain-text preview. Per session, one hash of
-- documents per kind, both of the session's own keys:
--   K_EDOCS  agent_search_entry_docs:<tag><u>:<s>  the Q&A entries ('entry')
--   K_SDOCS  agent_search_docs:<tag><u>:<s>        the messages ('message')
-- each '<kind> \t <id>' -> "ver \t length \t time \t digest \t preview"
-- (digest: of the terms, spec_digest), with ' v' (the
-- last ver), ' n' and ' len' (documents and their length); K_EDOCS also
-- holds ' cov' = "n \t fingerprint": the first n elements of the entries
-- list are indexed and element n-1 has that fingerprint (entries another
-- program appended after them are indexed by session_search_catchup).
-- Per user, in the user's slot: agent_search:<tag><u>:<term> (postings, a
-- zset of "<s> \t <kind> \t <id> \t ver \t tf \t length" scored by the
-- document's time, µs; a posting whose ver and time are not its document's
-- is stale and dropped lazily by a query) and agent_search_stats:<tag><u>
-- (n, len: the documents and their words, for BM25). Both live as long as
-- the user's sessions: an index write gives them the session's TTL, and
-- every slide of a session's TTL extends the statistics.

-- hincr adds whole number n to field of hash key; nothing for 0 (Redis
-- refuses the "-0" Lua writes for minus zero) or for what is not a whole
-- number (a count another program spoiled is left as it is, not failed on).
local function hincr(key, field, n)
  n = tonumber(n)
  if not n or n == 0 or n ~= math.floor(n) or math.abs(n) >= 2 ^ 53 then return end
  local r = redis.pcall('HINCRBY', key, field, string.format('%d', n))
  if type(r) == 'table' and r.err and not string.find(r.err, 'not an integer', 1, true)
      and not string.find(r.err, 'overflow', 1, true) then
    error(r) -- anything but the spoiled count (the key's type is checked before)
  end
end

-- stats_drop takes n documents of length len out of the user's search
-- statistics, when they still exist (never creating a key without a TTL).
local function stats_drop(n, len)
  if redis.call('EXISTS', K_SSTATS) == 1 then
    hincr(K_SSTATS, 'n', -n)
    hincr(K_SSTATS, 'len', -len)
  end
end

-- index_expire gives an index key at least ttl seconds to live (0 =
-- persist), like meta_expire: p is the key's PTTL before this write added
-- to it (-2: the write created it). A key without expiry keeps none (a
-- session without expiry holds it). The EXPIRE is skipped while the key
-- has more than ttl less min(60 s, ttl/1000) left (the session keys' slide
-- rule): an append then costs one PTTL per term, not two commands.
local function index_expire(key, ttl, p)
  if ttl == 0 then
    if p ~= -1 then redis.call('PERSIST', key) end
    return
  end
  local slack = math.min(60, math.floor(ttl / 1000))
  if p == -2 or (p >= 0 and p < (ttl - slack) * 1000) then redis.call('EXPIRE', key, ttl) end
end

-- check_terms is guard's check of the postings keys the documents of batch
-- ({spec=} each: "term tf ...") would write: nil, or the refusal. O(terms).
local function check_terms(batch)
  for _, m in ipairs(batch) do
    for t in string.gmatch(m.spec or '', '(%S+) %d+') do
      local key = SEARCH_PREFIX .. t
      local got = key_type(key)
      if got ~= 'none' and got ~= 'zset' then
        return redis.error_reply('KEYTYPE ' .. key .. ' ' .. got .. ' zset')
      end
    end
  end
  return nil
end

-- unindex_doc takes document kind/id out of docs, the session's documents
-- of that kind (its postings go stale: a query drops them when it meets
-- them).
local function unindex_doc(docs, kind, id)
  local doc = kind .. '\t' .. id
  local old = redis.call('HGET', docs, doc)
  if not old then return end
  local len = tonumber(string.match(old, '^%d+\t(%d+)') or '0')
  redis.call('HDEL', docs, doc)
  hincr(docs, ' n', -1)
  hincr(docs, ' len', -len)
  stats_drop(1, len)
end

-- write_postings adds to the postings of each term of spec the posting of
-- this session's document doc at version v (length len, scored by time at,
-- µs), giving each key at least ttl (index_expire). O(terms).
local function write_postings(doc, v, spec, len, at, ttl)
  local member = SID .. '\t' .. doc .. '\t' .. v .. '\t'
  for t, tf in string.gmatch(spec, '(%S+) (%d+)') do
    local key = SEARCH_PREFIX .. t
    local p = redis.call('PTTL', key)
    redis.call('ZADD', key, at, member .. tf .. '\t' .. len)
    index_expire(key, ttl, p)
  end
end

-- spec_digest identifies a document's terms and frequencies (a refresh
-- tells an unchanged document by it).
local function spec_digest(spec)
  return string.sub(redis.sha1hex(spec), 1, 16)
end

-- index_doc puts document kind/id in the index, docs being the session's
-- documents of that kind: spec "term tf term tf ...", its length and
-- preview, at time now (µs: its postings' score, newest first). An empty
-- spec (no searchable word) takes the document out. O(terms), at most 256.
-- posted: the postings the script already added as its first writes
-- (session_append: they check the postings keys' types themselves, with
-- nothing written when one refuses): {v = the version they carry,
-- fresh = docs held no version yet, p = {postings key -> its PTTL before}};
-- index_doc then writes the rest and gives those keys their TTLs.
local function index_doc(docs, kind, id, spec, len, preview, now, posted)
  unindex_doc(docs, kind, id)
  if spec == '' then return end
  local ttl = session_ttl()
  local ver
  if posted then
    ver = posted.v
    redis.call('HSET', docs, ' v', string.format('%d', ver))
    if posted.fresh and ttl > 0 then redis.call('EXPIRE', docs, ttl) end
  else
    ver = redis.call('HINCRBY', docs, ' v', 1)
  end
  if ver == 1 then
    -- a new hash of documents: versions start at the clock (µs), so a
    -- version is never reused after the hash was dropped and made again
    -- (a stale posting must not match a later document)
    ver = now_us()
    redis.call('HSET', docs, ' v', string.format('%d', ver))
    -- it lives as long as the session, whether or not this write slides
    -- the session's TTLs
    if ttl > 0 then redis.call('EXPIRE', docs, ttl) end
  end
  local doc = kind .. '\t' .. id
  local v, at = string.format('%d', ver), string.format('%d', now)
  redis.call('HSET', docs, doc, v .. '\t' .. len .. '\t' .. at .. '\t' .. spec_digest(spec) .. '\t' .. preview)
  hincr(docs, ' n', 1)
  hincr(docs, ' len', len)
  local ps = redis.call('PTTL', K_SSTATS)
  hincr(K_SSTATS, 'n', 1)
  hincr(K_SSTATS, 'len', len)
  if posted then
    for key, p in pairs(posted.p) do index_expire(key, ttl, p) end
  else
    write_postings(doc, v, spec, len, at, ttl)
  end
  index_expire(K_SSTATS, ttl, ps)
end

-- refresh_doc writes the postings of document kind/id again as they are
-- (same version, length and time: ZADD of the same members, so a posting
-- that expired comes back and none is added twice), with the session's
-- TTL, when the stored document is spec's (its digest, length and
-- preview); returns false (nothing written) when it is not: the text
-- changed, the caller indexes it anew.
local function refresh_doc(docs, kind, id, spec, len, preview)
  local doc = kind .. '\t' .. id
  local old = redis.call('HGET', docs, doc)
  local v, l, at, dg, p = string.match(old or '', '^(%d+)\t(%d+)\t(%d+)\t(%x+)\t(.*)$')
  if not v or tonumber(l) ~= len or dg ~= spec_digest(spec) or p ~= preview then return false end
  local ttl = session_ttl()
  write_postings(doc, v, spec, l, at, ttl)
  index_expire(K_SSTATS, ttl, redis.call('PTTL', K_SSTATS))
  return true
end

-- unindex_all takes every document of docs (one kind, the session's) out
-- of the index: O(1), the hash is UNLINKed.
local function unindex_all(docs)
  local agg = redis.call('HMGET', docs, ' n', ' len')
  local n, len = tonumber(agg[1] or '0') or 0, tonumber(agg[2] or '0') or 0
  if n ~= 0 or len ~= 0 then stats_drop(n, len) end
  redis.call('UNLINK', docs)
end

-- entries_cov is K_EDOCS's ' cov': the number of leading elements of the
-- entries list the index has taken in, the fingerprint of the last of them
-- ('' for none), ' since': when (µs) the index last began taking the
-- list in from its first element (nil: never), and whether a refresh walk
-- is under way (' refresh').
local function entries_cov()
  local v = redis.call('HMGET', K_EDOCS, ' cov', ' since', ' refresh')
  local n, fp = string.match(v[1] or '', '^(%d+)\t(.*)$')
  return tonumber(n or '0'), fp or '', tonumber(v[2] or ''), v[3] ~= false and v[3] ~= nil
end

local function set_cov(n, fp)
  redis.call('HSET', K_EDOCS, ' cov', string.format('%d', n) .. '\t' .. fp)
end

-- cov_valid: the first n elements of the entries list are still the ones
-- the index took in (the last of them has fingerprint fp). One LINDEX.
local function cov_valid(n, fp)
  return n == 0 or fingerprint('qa', redis.call('LINDEX', K_ENTRIES, n - 1)) == fp
end

-- refresh_due: the index began taking the entries in more than half the
-- session's TTL ago, so the user's postings of its older entries may
-- expire before the session: session_search_pending then takes every entry
-- in again (each document's postings written anew, with the TTL).
local function refresh_due(since)
  local ttl = session_ttl()
  return since ~= nil and ttl > 0 and now_us() - since > ttl * 500000
end

-- entries_removed keeps the entries' index right after the first k
-- elements of the entries list were trimmed: removed holds their bytes
-- when they were read (their documents leave the index), nil when not.
-- When the index cannot stay right (the elements were not read, or it no
-- longer described the list), the session's entries are dropped from it,
-- to be taken in again a step at a time by session_search_catchup: returns
-- true then.
local function entries_removed(k, removed)
  if redis.call('EXISTS', K_EDOCS) == 0 then return false end
  local n, fp = entries_cov()
  if not removed or (n > 0 and n <= k and fingerprint('qa', removed[n]) ~= fp) then
    unindex_all(K_EDOCS)
    return true
  end
  for _, el in ipairs(removed) do
    local id = id_of(el, 'qa_id')
    if id then unindex_doc(K_EDOCS, 'entry', id) end
  end
  -- past the trimmed ones, the covered prefix keeps its last element (a
  -- fingerprint that no longer matches is found by the next catch-up)
  if n > k then set_cov(n - k, fp) elseif n > 0 then set_cov(0, '') end
  return false
end

-- entry_gone keeps the entries' covered prefix right after the sidecar
-- removed the element at pos: valid is cov_valid() as it was before the
-- removal (an invalid prefix is left as it is, for the next catch-up to
-- find).
local function entry_gone(pos, valid)
  local n, fp = entries_cov()
  if not valid or pos >= n then return end
  if n == 1 then
    set_cov(0, '')
  elseif pos == n - 1 then
    set_cov(n - 1, fingerprint('qa', redis.call('LINDEX', K_ENTRIES, pos - 1)))
  else
    set_cov(n - 1, fp)
  end
end
