-- registry: helpers of the registry scripts (registry_*.lua), session
-- writes on the core (lua/lib/session.lua), some of them on several
-- sessions of one user (start-or-reuse, end the active session): another
-- session's context is session.at(c, sid), whose keys all stay in the
-- user's slot on Redis Cluster. Every helper takes the context of the
-- session it acts on.
--
-- The metadata indexes: a session's metadata (record field 'metadata', a
-- flat JSON string map) is indexed per (key, value) in two activity
-- indexes of the core (session.index_in: scored by last activity,
-- re-scored at the core's grain, pruned of expired members, left by a
-- delete): the user's (members session ids) and the bucket's across users
-- (members "<u>:<s>"). Their names follow the record key's tag
-- (redisstore/keys_registry.go builds the same names):
--   agent_session_meta:<tag><u>:<key>=<value>
--   agent_session_meta_global:<tag><key>=<value>
-- Keys are [A-Za-z0-9_.-], so the first '=' ends the key.
--- @include json
--- @include clock
--- @include guard
--- @include session
--- @include events

-- ACTIVE_SCAN bounds the running sessions one call examines (the user's
-- running index, newest first).
local ACTIVE_SCAN = 256
-- AUTO_CLOSE_MAX bounds the abandoned sessions one start closes.
local AUTO_CLOSE_MAX = 16
-- STATE: the session state's family (registry/keys.go).
local STATE = 'agent_session_state'

-- names returns the user's and the bucket's index of pair k=v.
local function names(c, k, v)
  return session.user_key(c, 'agent_session_meta', k .. '=' .. v),
    session.bucket_key(c, 'agent_session_meta_global', k .. '=' .. v)
end

-- pairs_of is the map of metadata text meta (nil, '' or JSON; text that is
-- no flat string map, written by hand, holds no pair): its string pairs.
local function pairs_of(meta)
  local out = {}
  if not meta or meta == '' or meta == '{}' then return out end
  local ok, m = pcall(cjson.decode, meta)
  if not ok or type(m) ~= 'table' then return out end
  for k, v in pairs(m) do
    if type(k) == 'string' and type(v) == 'string' then out[k] = v end
  end
  return out
end

-- index_pairs files session c in the indexes of the pairs of map m that
-- have (a map, or nil) does not hold (before session.commit).
local function index_pairs(c, m, have)
  for k, v in pairs(m) do
    if not have or have[k] ~= v then
      local uk, gk = names(c, k, v)
      session.index_in(c, uk, true)
      session.index_in(c, gk, false)
    end
  end
end

-- unindex_pairs takes session c out of the indexes of the pairs of map m
-- that keep (a map) does not hold (after session.commit).
local function unindex_pairs(c, m, keep)
  for k, v in pairs(m) do
    if keep[k] ~= v then
      local uk, gk = names(c, k, v)
      session.index_out(c, uk)
      session.index_out(c, gk)
    end
  end
end

-- candidates returns the running sessions of c's user whose metadata
-- holds every pair of match (a table, or nil for all), most recently
-- active first, as {sid=, last=, meta=, c=} (last activity, µs; meta the
-- stored metadata text; c the session's context): at most want of them,
-- and only the first when it is active at or after cutoff (µs; nil: no
-- such stop). It reads newest first, 32 at a time, examining at most
-- ACTIVE_SCAN members, the user's sessions holding match's first pair (by
-- key name: its metadata index), or without a match the running index; so
-- sessions of the user's other agents do not use up the scan. Members
-- whose record is gone (expired), no longer running or not holding every
-- pair are skipped. The second result lists what it read of an expired
-- session in a metadata index, for drop_expired. It only reads; a third
-- result is the refusal when the index it reads holds another type.
local function candidates(c, match, want, cutoff)
  local out = {}
  local from_key = session.user_set(c, 'running')
  local gone = {}
  if match then
    local ks = {}
    for k in pairs(match) do ks[#ks + 1] = k end
    table.sort(ks)
    if #ks > 0 then
      local uk, gk = names(c, ks[1], match[ks[1]])
      from_key, gone.user, gone.global = uk, uk, gk
    end
  end
  for from = 0, ACTIVE_SCAN - 1, 32 do
    local members = redis.pcall('ZREVRANGE', from_key, from, math.min(from + 31, ACTIVE_SCAN - 1))
    if members.err then return out, gone, guard.from_error(from_key, 'zset', members) end
    for _, sid in ipairs(members) do
      local s = session.at(c, sid)
      local r = redis.call('HMGET', s.record, 'status', 'last_activity_at', 'metadata')
      if not r[1] and gone.user then
        gone[#gone + 1] = sid -- no record: expired (a delete unindexes)
      elseif r[1] == 'running' then
        local ok = true
        if match then
          local m = pairs_of(r[3] or nil)
          for k, v in pairs(match) do
            if m[k] ~= v then
              ok = false
              break
            end
          end
        end
        if ok then
          out[#out + 1] = { sid = sid, last = tonumber(r[2]) or 0, meta = r[3] or nil, c = s }
          if #out >= want or (cutoff and #out == 1 and out[1].last >= cutoff) then
            return out, gone
          end
        end
      end
    end
    if #members < 32 then break end
  end
  return out, gone
end

-- drop_check is the refusal of drop_expired when the bucket's index of
-- gone holds another type (candidates read the user's as a zset), else
-- nil: call it with the other checks, before the first write.
local function drop_check(gone)
  if not gone.user or #gone == 0 then return nil end
  return guard.check({ { gone.global, 'zset' } })
end

-- drop_expired removes from the metadata indexes candidates read (the
-- user's and the bucket's) the expired sessions of c's user it met there:
-- the core prunes an index's least recently active members, and these
-- may be among its newest. A write, after drop_check.
local function drop_expired(c, gone)
  if not gone.user or #gone == 0 then return end
  for _, sid in ipairs(gone) do
    redis.call('ZREM', gone.user, sid)
    redis.call('ZREM', gone.global, c.uid .. ':' .. sid)
  end
end

-- utf8_prefix returns the first n code points of s.
local function utf8_prefix(s, n)
  local count = 0
  for i = 1, #s do
    local b = string.byte(s, i)
    if b < 0x80 or b >= 0xC0 then
      count = count + 1
      if count > n then return string.sub(s, 1, i - 1) end
    end
  end
  return s
end

-- read runs a read of key that refuses another type (its Redis type
-- want): its answer, or nil and the refusal.
local function read(key, want, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil, guard.from_error(key, want, r) end
  return r
end

-- auto_summary is the summary of auto-closed session c: "Auto-summary: "
-- and the first 80 code points of each of its newest 20 questions or user
-- messages (their content), oldest first, joined by "; ", at most 1000
-- code points in all. It reads the 20 newest entries and the 40 newest
-- messages (the messages module's keys, by their prefixes:
-- redisstore/families.go): bounded whatever the session holds. The second
-- result is the refusal when one of those keys holds another type.
local function auto_summary(c)
  local items = {}
  local entries = session.key(c, 'agent_sessions')
  local list, refused = read(entries, 'list', 'LRANGE', entries, -20, -1)
  if refused then return nil, refused end
  for _, el in ipairs(list) do
    local ok, q = pcall(json.id_of, el, 'question')
    if ok and type(q) == 'string' and q ~= '' then
      items[#items + 1] = { t = clock.entry_time_us(el) or 0, n = #items, text = q }
    end
  end
  local order, msgs = session.key(c, 'agent_session_msg_order'), session.key(c, 'agent_session_msgs')
  -- the newest committed: a staged append's messages (messages_stage_open.lua)
  -- come after the record's msg_seq
  local ids
  local seq = redis.call('HGET', c.record, 'msg_seq')
  if seq and string.match(seq, '^%d+$') then
    ids, refused = read(order, 'zset', 'ZREVRANGEBYSCORE', order, seq, '-inf', 'LIMIT', 0, 40)
  else
    ids, refused = read(order, 'zset', 'ZREVRANGE', order, 0, 39)
  end
  if refused then return nil, refused end
  local got = {}
  if #ids > 0 then
    got, refused = read(msgs, 'hash', 'HMGET', msgs, unpack(ids))
  else -- checked all the same: a messages hash of another type is refused
    refused = select(2, read(msgs, 'hash', 'HLEN', msgs))
  end
  if refused then return nil, refused end
  for i = #got, 1, -1 do -- oldest first: a batch shares one created_at
    local m = got[i]
    if m then
      local ok, role = pcall(json.id_of, m, 'role')
      local ok2, content = pcall(json.id_of, m, 'content')
      if ok and ok2 and role == 'user' and type(content) == 'string' and content ~= '' then
        local at = string.match(m, '"created_at":"([^"]*)"}%s*$')
        items[#items + 1] = { t = (at and clock.iso_time_us(at)) or 0, n = #items, text = content }
      end
    end
  end
  table.sort(items, function(a, b)
    if a.t ~= b.t then return a.t < b.t end
    return a.n < b.n
  end)
  local parts = {}
  for i = math.max(1, #items - 19), #items do parts[#parts + 1] = utf8_prefix(items[i].text, 80) end
  return utf8_prefix('Auto-summary: ' .. table.concat(parts, '; '), 1000)
end

-- end_session ends committed session c (session.commit(c, {status =
-- 'completed'}), after events.use) with reason, summary (or nil) and
-- whether it was generated: clears a pending abort, emits its status
-- event, and finishes the write.
local function end_session(c, reason, summary, auto)
  local now = session.now(c)
  local f = { 'ended_at', string.format('%d', now), 'end_reason', reason }
  if summary then
    f[#f + 1], f[#f + 2] = 'summary', summary
    f[#f + 1], f[#f + 2] = 'summary_auto_generated', auto and '1' or '0'
  end
  session.clear_abort(c)
  events.emit(c, 'status', 'state', nil,
    '{"status":"completed","end_reason":"' .. reason .. '","ended_at":"' .. clock.iso_time(now) .. '"}')
  session.finish(c, f)
end

-- skip_ws is the index of the first byte of s at or after i that is not
-- JSON whitespace (json.lua's, which it does not export).
local function skip_ws(s, i)
  return string.find(s, '[^ \t\r\n]', i) or (#s + 1)
end

-- key_name is the name a raw JSON object key (the text between its quotes)
-- stands for: "\u0061" and "a" are one key. Keys without an escape are
-- their own name (no decode).
local function key_name(raw)
  if not string.find(raw, '\\', 1, true) then return raw end
  local ok, name = pcall(cjson.decode, '"' .. raw .. '"')
  if ok then return name end
  return raw
end

-- readable reports whether stored state text s is a JSON object (what the
-- sidecar stores); a state another program wrote otherwise is refused, not
-- merged over.
local function readable(s)
  if string.byte(s, skip_ws(s, 1)) ~= 123 then return false end
  local ok, v = pcall(cjson.decode, s)
  return ok and type(v) == 'table'
end

-- merge_patch applies the JSON merge patch text patch (RFC 7396) to the
-- JSON text target (nil: none) and returns the result text. Objects are
-- merged key by key (a null removes the key), anything else replaces; the
-- bytes of every value the patch does not touch are kept as they are (no
-- decode/encode: numbers and empty arrays survive). Keys compare by the
-- names they stand for, however escaped (a key keeps the spelling it was
-- first stored with), so the result never holds one key twice.
-- O(size of target + patch).
local function merge_patch(target, patch)
  if string.byte(patch, skip_ws(patch, 1)) ~= 123 then return patch end
  local ks, vals, at = {}, {}, {}
  if target and string.byte(target, skip_ws(target, 1)) == 123 then
    for _, f in ipairs(json.object_fields(target)) do
      local name = key_name(f.key)
      if not at[name] then
        ks[#ks + 1] = f.key
        vals[#ks] = string.sub(target, f.vs, f.ve - 1)
        at[name] = #ks
      end
    end
  end
  for _, f in ipairs(json.object_fields(patch)) do
    local v = string.sub(patch, f.vs, f.ve - 1)
    local name = key_name(f.key)
    local j = at[name]
    if v == 'null' then
      if j then vals[j] = false end
    elseif j then
      vals[j] = merge_patch(vals[j] or nil, v)
    else
      ks[#ks + 1] = f.key
      vals[#ks] = merge_patch(nil, v)
      at[name] = #ks
    end
  end
  local parts = {}
  for i, k in ipairs(ks) do
    if vals[i] then parts[#parts + 1] = '"' .. k .. '":' .. vals[i] end
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- read_state reads the state at key for a merge: its text (nil: none),
-- or nil and an answer: the refusal when key holds another type, or
-- {'ok', 'unreadable'} when the text is not a JSON object.
local function read_state(key)
  local old, refused = read(key, 'string', 'GET', key)
  if refused then return nil, refused end
  if old and not readable(old) then return nil, { 'ok', 'unreadable' } end
  return old or nil
end

return {
  AUTO_CLOSE_MAX = AUTO_CLOSE_MAX,
  STATE = STATE,
  names = names,
  pairs_of = pairs_of,
  index_pairs = index_pairs,
  unindex_pairs = unindex_pairs,
  candidates = candidates,
  drop_check = drop_check,
  drop_expired = drop_expired,
  auto_summary = auto_summary,
  end_session = end_session,
  merge_patch = merge_patch,
  read_state = read_state,
}
