-- guard: the one type check of the scripts. Redis does not roll back a
-- script that fails half-way, so a writing script makes every check before
-- its first write: guard.check takes the list of {key, type} pairs the
-- script would write (or read as that type) and refuses the first key
-- another program wrote with another type, before anything is written.
--
-- A refusal is reply.lua's {'refused', 'key_wrong_type', text} (409).
--- @include reply

-- key_type is TYPE's answer as a string ('none' for a missing key).
local function key_type(k)
  local t = redis.call('TYPE', k)
  if type(t) == 'table' then t = t.ok end
  return t
end

-- refusal is the reply refusing key, of type got where want is kept.
local refusal = reply.wrong_type

-- bad_field is the reply refusing record field of key: what it is not.
local function bad_field(key, field, what)
  return reply.bad_key('field ' .. field .. ' of Redis key ' .. key .. ' is not ' .. what)
end

-- check returns the refusal of the first pair of checks ({key, type} each)
-- whose key exists with another type, or nil. A pair {key, type, 'self'}
-- is one the script checks itself: its first command on the key (a pcall:
-- locate's reads, the first write's XADD) refuses another type before
-- anything is written; check asks no TYPE of it. Each key is asked once.
local function check(checks)
  local asked = {}
  for _, c in ipairs(checks) do
    local k = c[1]
    if not asked[k] then
      asked[k] = true
      if c[3] ~= 'self' then
        local got = key_type(k)
        if got ~= 'none' and got ~= c[2] then return refusal(k, got, c[2]) end
      end
    end
  end
  return nil
end

-- from_error is what a script answers when the command by which it checks
-- key's type itself (a pcall; check's 'self') failed with err: the
-- refusal for a key of another type, and any other error (OOM, READONLY,
-- NOPERM) as Redis gave it.
local function from_error(key, want, err)
  if string.sub(err.err or '', 1, 9) ~= 'WRONGTYPE' then return err end
  return refusal(key, key_type(key), want)
end

-- read runs read command cmd on key k, kept as Redis type kind, as a
-- pcall: its answer, or nil and the refusal of a key of another type
-- (from_error; any other error as Redis gave it). A write that reads a key
-- so first, before its first write, needs no check of it.
local function read(cmd, k, kind, ...)
  local r = redis.pcall(cmd, k, ...)
  if type(r) == 'table' and r.err then return nil, from_error(k, kind, r) end
  return r
end

-- describe is check's finding about key k as a message (nil: k is missing
-- or of type want), for a script whose refusal is a message of its own.
local function describe(k, want)
  local t = key_type(k)
  if t ~= 'none' and t ~= want then
    return string.format('Redis key %s holds a %s, not a %s', k, t, want)
  end
  return nil
end

return {
  key_type = key_type,
  refusal = refusal,
  bad_field = bad_field,
  check = check,
  from_error = from_error,
  read = read,
  describe = describe,
}
