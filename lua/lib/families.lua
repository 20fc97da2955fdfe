-- families: the session families a session has (the record's fams: the
-- codes of keys.code, " e q "), which the core's slides and delete touch,
-- and Cognee's lists, which Cognee writes too. c is a session context
-- (session.open), begun (session.begin) for all but key.
--- @include keys
--- @include clock
--- @include guard

-- key is the session's key of family prefix: <prefix>:<tag><u>:<s>.
local function key(c, prefix)
  return prefix .. ':' .. c.id
end

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
  return c.fams_text ~= nil and string.find(c.fams_text, keys.pat[code], 1, true) ~= nil
end

-- has reports whether the session has family prefix (its record lists it,
-- or this write adds it).
local function has(c, prefix)
  local code = keys.code[prefix]
  return c.added[code] ~= nil or had(c, code)
end

-- use declares that this write writes the session's key of family prefix
-- (a Redis type kind) and returns it. A family the session does not have
-- yet is added to fams by finish, gets its TTL there, and has its key's
-- type checked by commit, before the first write, unless read_first: the
-- script read it first with a command that refuses another type (a pcall:
-- guard.from_error). After commit only for a key the write just removed.
local function use(c, prefix, kind, read_first)
  local code = keys.code[prefix]
  if not code then error('session.use: ' .. prefix .. ' is no registered session family') end
  local k = prefix .. ':' .. c.id
  if c.added[code] == nil and not had(c, code) then
    c.added[code] = k
    if not read_first then
      c.checks = c.checks or {}
      c.checks[#c.checks + 1] = { k, kind }
    end
  end
  return k
end

-- drop notes that this write removed the session's key of family prefix
-- (emptied or unlinked it): finish takes it off fams, so no slide touches
-- it, and the write that makes it again gives it its TTL.
local function drop(c, prefix)
  local code = keys.code[prefix]
  c.dropped = c.dropped or {}
  c.dropped[code], c.added[code], c.fams_changed = true, nil, true
end

-- made notes that this write made the key of family prefix anew although
-- the session has the family (another program removed the key: an RPUSH
-- that answered 1): finish gives it its TTL.
local function made(c, prefix)
  if not had(c, keys.code[prefix]) then return end
  c.made = c.made or {}
  c.made[#c.made + 1] = prefix .. ':' .. c.id
end

-- cognee_first reads, for a write that starts the session, the first
-- element of Cognee's entries list, which finish needs (cognee_start)
-- after the write's writes: as a pcall before the first write, so that a
-- list of another type is refused with nothing written. A write that
-- reads or checks the list itself (session.use of its family) reads it in
-- finish.
local function cognee_first(c)
  if has(c, keys.cognee_entries) then return nil end
  local k = key(c, keys.cognee_entries)
  local first = redis.pcall('LINDEX', k, 0)
  if type(first) == 'table' and first.err then return guard.from_error(k, 'list', first) end
  c.cognee_first = first or false
  return nil
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

-- cognee_keys are the session's keys of Cognee's families (its lists).
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

-- set_ttl gives the session its own TTL t (0: none) (before a commit with
-- opts.force): the record's ttl_seconds is the caller's, every key it has
-- slides to t, and Cognee's lists too, whatever wrote them.
local function set_ttl(c, t)
  c.own_ttl = t
  for _, p in ipairs(keys.cognee) do
    local code = keys.code[p]
    if not had(c, code) then
      local k = key(c, p)
      if redis.call('EXISTS', k) == 1 then c.added[code] = k end
    end
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

return {
  key = key,
  fams_set = fams_set,
  had = had,
  has = has,
  use = use,
  drop = drop,
  made = made,
  cognee_first = cognee_first,
  cognee_start = cognee_start,
  cognee_keys = cognee_keys,
  exists = exists,
  set_ttl = set_ttl,
  own_keys = own_keys,
}
