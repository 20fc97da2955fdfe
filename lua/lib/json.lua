-- json: byte-exact edits of JSON text. JSON is never decoded and
-- re-encoded by the scripts (Lua cjson turns [] into {}, re-encodes
-- numbers and escapes '/', and Cognee's json.dumps writes bare NaN): a
-- small scanner finds the byte span of each top-level field, and edits
-- splice new values (encoded by the sidecar) into those spans, so the bytes
-- of every other field stay exactly as they were.
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

return {
  object_fields = object_fields,
  field_raw = field_raw,
  id_of = id_of,
  set_fields = set_fields,
  set_fields_quick = set_fields_quick,
  set_fields_scan = set_fields_scan,
  merge_object = merge_object,
}
