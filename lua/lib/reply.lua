-- reply: the one reply convention of the scripts. A script answers a
-- table whose first element says what happened, and the sidecar decodes
-- every answer in one place (lua.Decode):
--   {'ok', ...}               done: the values the script's header names
--   {'dup', ...}              done before (a retried write): nothing
--                             written now; the values of the first time
--   {'missing'}               no such session or object: nothing written
--   {'refused', code, text}   refused, nothing written: code is the API's
--                             error code (key_wrong_type, stored_value_invalid,
--                             usage_overflow, ...), text says why (409)
--   {'index_build', which}    an id index must be built a step at a time
--                             first (idindex); nothing written but its steps
-- A Redis error (OOM, READONLY, NOPERM) stays an error reply.

local function ok(...) return { 'ok', ... } end
local function dup(...) return { 'dup', ... } end
local function missing() return { 'missing' } end
local function refused(code, text) return { 'refused', code, text } end

-- wrong_type refuses key, holding a got where want is kept.
local function wrong_type(key, got, want)
  return refused('key_wrong_type', 'Redis key ' .. key .. ' holds a ' .. got .. ' where the sidecar keeps a '
    .. want .. ' (another program wrote it); nothing was changed: delete or rename that key')
end

-- bad_key refuses what text describes (a record field that is not what
-- the scripts keep there).
local function bad_key(text)
  return refused('key_wrong_type', text .. ' (another program wrote it); nothing was changed')
end

-- bad_value refuses element id of list key, which is not a JSON object.
local function bad_value(key, id)
  return refused('stored_value_invalid', 'the element ' .. id .. ' of Redis list ' .. key
    .. ' is not a JSON object (another program wrote it); nothing was changed')
end

-- is_refusal reports whether r is a refusal or an error reply (a script
-- returns it as it is).
local function is_refusal(r)
  return type(r) == 'table' and (r[1] == 'refused' or r.err ~= nil)
end

return {
  ok = ok,
  dup = dup,
  missing = missing,
  refused = refused,
  wrong_type = wrong_type,
  bad_key = bad_key,
  bad_value = bad_value,
  is_refusal = is_refusal,
}
