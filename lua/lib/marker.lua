-- marker: the user's marker, agent_user_marker:<tag><sha1(u)> (a hash
-- named by the user's SHA1, so that it may outlive an erasure without
-- naming the user), which every session write reads in one command with
-- the record (session.begin). Its fields: fence (while set, "<code>
-- <text>": every write of the user is refused with it, '{user_id}' in the
-- text read as the user's id; the erasure's), keys (JSON: the user's keys
-- that live as long as the user's sessions: keep) and the fields modules
-- register (keys.marker; a per-session one is "<field>:<session id>"),
-- read as c.marks[field]; and two the core keeps for the user's kept keys'
-- lifetime: persisted (how many of the user's sessions have their own TTL
-- 0, and so hold the kept keys without expiry) and ttl_max (the longest
-- own TTL, seconds, a session of the user was given). c is a session
-- context (session.open).
--- @include keys
--- @include guard
--- @include reply

-- check_keys refuses a list of kept keys another program spoiled (c.refused_by
-- 'keys'), here, before the first write, not where a slide decodes it
-- (after the bookkeeping); else it is c.ukeys.
local function check_keys(c)
  if not c.ukeys_text then return nil end
  local ok, list = pcall(cjson.decode, c.ukeys_text)
  local good = ok and type(list) == 'table'
  for _, k in ipairs(good and list or {}) do
    if type(k) ~= 'string' then good = false end
  end
  if not good then
    c.refused_by = 'keys'
    return guard.bad_field(c.marker, 'keys', 'a JSON list of key names')
  end
  c.ukeys = list
  return nil
end

-- read reads the marker's fence, keys and registered fields into c, and
-- returns the refusal of a fenced user, of a marker of another type or of
-- a spoiled keys field (c.refused_by says which: 'fence', 'marker' or
-- 'keys'), else nil.
local function read(c)
  local us, ss = keys.marker.user, keys.marker.session
  local mf = { 'fence', 'keys', 'persisted', 'ttl_max' }
  for i = 1, #us do mf[#mf + 1] = us[i] end
  for i = 1, #ss do mf[#mf + 1] = ss[i] .. ':' .. c.sid end
  local m = redis.pcall('HMGET', c.marker, unpack(mf))
  if m.err then
    c.refused_by = 'marker'
    return guard.from_error(c.marker, 'hash', m)
  end
  if m[1] then
    c.refused_by = 'fence'
    local code, text = string.match(m[1], '^(%S+) (.*)$')
    text = string.gsub(text or m[1], '{user_id}', c.uid)
    return reply.refused(code or 'user_fenced', text)
  end
  c.ukeys_text = m[2] or nil
  c.persisted, c.ttl_max = tonumber(m[3] or '0') or 0, tonumber(m[4] or '0') or 0
  for i = 5, #mf do
    c.marks[i <= 4 + #us and us[i - 4] or ss[i - 4 - #us]] = m[i] or nil
  end
  return check_keys(c)
end

-- ukeys is the marker's list of the user's kept keys.
local function ukeys(c)
  if not c.ukeys then c.ukeys = c.ukeys_text and cjson.decode(c.ukeys_text) or {} end
  return c.ukeys
end

-- keep declares a user key (kind: its Redis type) this write writes, of a
-- user family that lives as long as the user's sessions: the marker lists
-- it, and every slide of every session of the user gives it at least that
-- session's TTL (EXPIRE GT: a key without expiry, which a session without
-- expiry holds, keeps none). Before commit, which checks the type of a key
-- not listed yet; such a key's TTL is read now (one PTTL), for list_keys.
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
  c.ukeys_new[k] = redis.call('PTTL', k)
  c.ukeys_changed = true
  return k
end

-- user_made notes a user key the marker lists that this write makes anew
-- (another program removed it): list_keys gives it its TTL.
local function user_made(c, k)
  c.ukeys_new = c.ukeys_new or {}
  c.ukeys_new[k] = -2
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

-- expire gives key k, whose PTTL before this write was p, TTL t: a key
-- the write made (-2) gets t, one with a TTL at least t, one without (a
-- session without expiry holds it) keeps none; t 0 (this session has no
-- expiry) takes the TTL of one that has one, as a slide does.
local function expire(k, t, p)
  if t <= 0 then
    if p >= 0 then redis.call('PERSIST', k) end
    return
  end
  if p == -1 then return end
  if p == -2 then
    redis.call('EXPIRE', k, t)
  else
    redis.call('EXPIRE', k, t, 'GT')
  end
end

-- list_keys writes the marker's list of the user's keys when this write
-- changed it, and gives the keys it listed or made anew, and a marker it
-- made, TTL t (expire). A write that wrote the marker before (a field of
-- its own) read its PTTL first: c.marker_pttl (note). While a session of
-- the user has no expiry (persisted), they keep none.
local function list_keys(c, t)
  if (c.persisted or 0) > 0 then t = 0 end
  if c.ukeys_changed then
    local p = c.marker_pttl or redis.call('PTTL', c.marker)
    redis.call('HSET', c.marker, 'keys', cjson.encode(c.ukeys))
    expire(c.marker, t, p)
  end
  for k, p in pairs(c.ukeys_new or {}) do expire(k, t, p) end
end

-- own_ttl_changed keeps the marker's persisted and ttl_max current when
-- the session's own TTL goes from was to now (nil: none of its own; now
-- nil: the session goes, a delete), after the write's commit. A marker
-- counting a session without expiry has none itself; one holding ttl_max
-- lives at least that long. Returns the TTL the user's kept keys without
-- one get back (lifecycle.unpersist) when the last session of the user
-- without expiry got one or went: the longest any session of the user may
-- still have left (the default TTL, ttl_max); else nil, and whether this
-- session left the count while another remains in it.
local function own_ttl_changed(c, was, now)
  if now and now > c.ttl_max then
    local p = redis.call('PTTL', c.marker)
    redis.call('HSET', c.marker, 'ttl_max', string.format('%d', now))
    if p == -2 then redis.call('EXPIRE', c.marker, now) elseif p >= 0 then redis.call('EXPIRE', c.marker, now, 'GT') end
    c.ttl_max = now
  end
  local delta = (now == 0 and 1 or 0) - (was == 0 and 1 or 0)
  if delta == 0 then return nil end
  local n = c.persisted + delta
  c.persisted = math.max(n, 0)
  if n > 0 then
    redis.call('HSET', c.marker, 'persisted', string.format('%d', n))
    if delta > 0 then redis.call('PERSIST', c.marker) end
    return nil, delta < 0
  end
  redis.call('HDEL', c.marker, 'persisted')
  -- SESSION_TTL_SECONDS=0: every session of the user without a TTL of its
  -- own has no expiry either, and holds the kept keys without one
  if c.default_ttl <= 0 then return nil end
  return math.max(c.default_ttl, c.ttl_max)
end

-- note reads the marker's PTTL before the write's first write of a field
-- of its own, for list_keys.
local function note(c)
  if not c.marker_pttl then c.marker_pttl = redis.call('PTTL', c.marker) end
end

-- forget_marks removes the session's fields of the user's marker.
local function forget_marks(c)
  local fs = {}
  for _, f in ipairs(keys.marker.session) do fs[#fs + 1] = f .. ':' .. c.sid end
  if #fs > 0 then redis.call('HDEL', c.marker, unpack(fs)) end
end

return {
  read = read,
  ukeys = ukeys,
  keep = keep,
  user_made = user_made,
  forget = forget,
  list_keys = list_keys,
  note = note,
  own_ttl_changed = own_ttl_changed,
  forget_marks = forget_marks,
}
