-- registry: helpers of the registry scripts (registry_*.lua), session
-- scripts (session.open's KEYS and first ARGVs), and of those that work on
-- several sessions of one user (start-or-reuse, end the active session):
-- they get another session's context with session.at(c, sid), whose keys
-- all stay in the user's slot on Redis Cluster. Every helper takes the
-- context of the session it acts on.
--- @include json
--- @include clock
--- @include guard
--- @include meta
--- @include session
--- @include events

-- ACTIVE_SCAN bounds the running sessions one call examines (the user's
-- running index, newest first).
local ACTIVE_SCAN = 256
-- AUTO_CLOSE_MAX bounds the abandoned sessions one start closes.
local AUTO_CLOSE_MAX = 16

-- candidates returns the running sessions of c's user whose metadata
-- holds every pair of match (a table, or nil for all), most recently
-- active first, as {sid=, last=, c=} (last activity, µs; c the session's
-- context): at most want of them, and only the first when it is active at
-- or after cutoff (µs; nil: no such stop). It reads newest first, 32 at a
-- time, examining at most ACTIVE_SCAN members, the user's sessions holding
-- match's first pair (by key name: its metadata index, scored by last
-- activity too), or without a match the running index; so sessions of the
-- user's other agents do not use up the scan. Members whose record is gone
-- (expired), no longer running or not holding every pair are skipped. The
-- second result lists what it read of an expired session in a metadata
-- index, for drop_expired: the expiry sweep cleans the status indexes, not
-- these. It only reads.
local function candidates(c, match, want, cutoff)
  local out = {}
  local from_key = c.user_sets.running
  local gone = {}
  if match then
    local names = {}
    for k in pairs(match) do names[#names + 1] = k end
    table.sort(names)
    if #names > 0 then
      local uk, gk = meta.names(c, names[1], match[names[1]])
      from_key, gone.user, gone.global = uk, uk, gk
    end
  end
  for from = 0, ACTIVE_SCAN - 1, 32 do
    local members = redis.call('ZREVRANGE', from_key, from, math.min(from + 31, ACTIVE_SCAN - 1))
    for _, sid in ipairs(members) do
      local s = session.at(c, sid)
      local r = redis.call('HMGET', s.record, 'status', 'last_activity_at', 'metadata')
      if not r[1] and gone.user then
        gone[#gone + 1] = sid -- no record: expired (a delete unindexes)
      elseif r[1] == 'running' then
        local ok = true
        if match then
          local m = {}
          if r[3] and r[3] ~= '' then m = cjson.decode(r[3]) end
          for k, v in pairs(match) do
            if m[k] ~= v then ok = false break end
          end
        end
        if ok then
          out[#out + 1] = { sid = sid, last = tonumber(r[2]), c = s }
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

-- drop_expired removes from the metadata index candidates read (user's and
-- bucket's) the expired sessions of c's user it met there, so an index
-- that only start-or-reuse reads does not grow with every session that
-- ever held the pair. A write: call it after every other check, before
-- the first write. It returns guard's refusal (nothing written) when the
-- bucket's index holds another type (candidates read the user's as a
-- zset), else nil.
local function drop_expired(c, gone)
  if not gone.user or #gone == 0 then return nil end
  local refused = guard.check({ { gone.global, 'zset' } })
  if refused then return refused end
  for _, sid in ipairs(gone) do
    redis.call('ZREM', gone.user, sid)
    redis.call('ZREM', gone.global, c.uid .. ':' .. sid)
  end
  return nil
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

-- auto_summary is the summary of auto-closed session c: "Auto-summary: "
-- and the first 80 code points of each of its newest 20 questions or user
-- messages (their content), oldest first, joined by "; ", at most 1000
-- code points in all. It reads the 20 newest entries and the 40 newest
-- messages (the messages module's keys, messages/keys.go):
-- bounded whatever the session holds.
local function auto_summary(c)
  local items = {}
  for _, el in ipairs(redis.call('LRANGE', c.entries, -20, -1)) do
    local ok, q = pcall(json.id_of, el, 'question')
    if ok and type(q) == 'string' and q ~= '' then
      items[#items + 1] = { t = clock.entry_time_us(el) or 0, n = #items, text = q }
    end
  end
  local ids = redis.call('ZREVRANGE', session.key(c, 'agent_session_msg_order'), 0, 39)
  if #ids > 0 then
    local msgs = redis.call('HMGET', session.key(c, 'agent_session_msgs'), unpack(ids))
    for i = #msgs, 1, -1 do -- oldest first: a batch shares one created_at
      local m = msgs[i]
      if m then
        local ok, role = pcall(json.id_of, m, 'role')
        local ok2, content = pcall(json.id_of, m, 'content')
        if ok and ok2 and role == 'user' and type(content) == 'string' and content ~= '' then
          local at = string.match(m, '"created_at":"([^"]*)"}%s*$')
          items[#items + 1] = { t = (at and clock.iso_time_us(at)) or 0, n = #items, text = content }
        end
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

-- summary_checks are guard's {key, type} pairs of what auto_summary reads
-- of session c (its entries, the messages module's order and messages),
-- for the check of a session it closes before the first write.
local function summary_checks(c)
  return { c.entries, 'list' }, { session.key(c, 'agent_session_msg_order'), 'zset' },
    { session.key(c, 'agent_session_msgs'), 'hash' }
end

-- end_session ends session c as completed with reason, summary (or nil)
-- and whether it was generated; clears a pending abort, emits its status
-- event, slides it and moves its indexes.
local function end_session(c, reason, summary, auto)
  local now = clock.now_us()
  local f = { 'status', 'completed', 'ended_at', string.format('%d', now), 'end_reason', reason }
  if summary then
    f[#f + 1], f[#f + 2] = 'summary', summary
    f[#f + 1], f[#f + 2] = 'summary_auto_generated', auto and '1' or '0'
  end
  redis.call('HSET', c.record, unpack(f))
  session.clear_abort(c)
  events.emit(c, 'status', 'state', nil,
    '{"status":"completed","end_reason":"' .. reason .. '","ended_at":"' .. clock.iso_time(now) .. '"}')
  session.finish_write(c, true)
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
  local names, vals, at = {}, {}, {}
  if target and string.byte(target, skip_ws(target, 1)) == 123 then
    for _, f in ipairs(json.object_fields(target)) do
      local name = key_name(f.key)
      if not at[name] then
        names[#names + 1] = f.key
        vals[#names] = string.sub(target, f.vs, f.ve - 1)
        at[name] = #names
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
      names[#names + 1] = f.key
      vals[#names] = merge_patch(nil, v)
      at[name] = #names
    end
  end
  local parts = {}
  for i, k in ipairs(names) do
    if vals[i] then parts[#parts + 1] = '"' .. k .. '":' .. vals[i] end
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

return {
  AUTO_CLOSE_MAX = AUTO_CLOSE_MAX,
  candidates = candidates,
  drop_expired = drop_expired,
  auto_summary = auto_summary,
  summary_checks = summary_checks,
  end_session = end_session,
  merge_patch = merge_patch,
  readable = readable,
}
