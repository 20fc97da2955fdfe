--! prelude: messages_lib
-- messages_compact: store a compaction of the range from..to (from an
-- ancestor of, or equal to, to): reads of a path through it show one
-- synthetic system message holding the summary instead of the range. A
-- compaction whose range covers earlier ones supersedes them (they are
-- deleted); one that partly overlaps one in force is refused. A range that
-- holds a tool message without the message carrying its call, or a call
-- without its result, is refused. O(range + compactions × log n).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the compaction's id
-- ARGV[6] the summary as a JSON string
-- ARGV[7] from_id, ARGV[8] to_id
-- ARGV[9] the summary's tokens
-- ARGV[10] the most compactions in force per session
-- returns {1, compaction JSON}; with nothing written, {-1, code, detail}:
--   'invalid_range' (detail: why), 'compaction_overlap' (detail: the
--   compaction in force), 'splits_tool_call' (detail: the call id),
--   'too_many_compactions', 'wrong_type'.
local cid, summary, from_id, to_id, stokens, max = ARGV[5], ARGV[6], ARGV[7], ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])
local refused = write_checks()
if refused then return refused end
local from, to = node(from_id), node(to_id)
if not from then return { -1, 'invalid_range', 'the session has no message ' .. from_id } end
if not to then return { -1, 'invalid_range', 'the session has no message ' .. to_id } end
if from.depth > to.depth or ancestor(to, from.depth).id ~= from.id then
  return { -1, 'invalid_range', from_id .. ' is not an ancestor of ' .. to_id .. ' (after it, or on another branch)' }
end

-- tool calls and results inside the range pair up
local calls, results = {}, {}
local v = to
while true do
  local m = redis.call('HGET', K_MSGS, v.id) or '{}'
  if id_of(m, 'role') == 'tool' then
    local r = id_of(m, 'tool_call_id')
    if r then results[r] = true end
  end
  local raw = string.find(m, '"tool_calls"', 1, true) and field_raw(m, 'tool_calls')
  if raw then
    local ok, list = pcall(cjson.decode, raw)
    if ok and type(list) == 'table' then
      for _, c in ipairs(list) do
        if type(c) == 'table' and type(c.id) == 'string' then calls[c.id] = true end
      end
    end
  end
  if v.id == from.id then break end
  v = node(v.parent)
end
for r in pairs(results) do
  if not calls[r] then return { -1, 'splits_tool_call', r } end
end
for c in pairs(calls) do
  if not results[c] then return { -1, 'splits_tool_call', c } end
end

-- the compactions in force: superseded (inside the new range) or apart
local superseded, kept = {}, 0
for _, c in ipairs(compactions()) do
  local cf, ct = node(c.from), node(c.to)
  if cf and ct then
    local lo, hi = math.max(from.depth, cf.depth), math.min(to.depth, ct.depth)
    local meet = lo <= hi and ancestor(to, lo).id == ancestor(ct, lo).id
    if meet then
      local inside = cf.depth >= from.depth and ct.depth <= to.depth and ancestor(to, ct.depth).id == ct.id
      if not inside then return { -1, 'compaction_overlap', c.id } end
      superseded[#superseded + 1] = c.id
    else
      kept = kept + 1
    end
  end
end
if kept + 1 > max then return { -1, 'too_many_compactions', fmt_int(max) } end

-- the writes
local json = '{"id":"' .. cid .. '","summary":' .. summary .. ',"from_id":"' .. from_id .. '","to_id":"' .. to_id ..
  '","created_at":"' .. iso_time(now_us()) .. '"}'
local created = redis.call('EXISTS', K_MCOMP) == 0
for _, id in ipairs(superseded) do redis.call('HDEL', K_MCOMP, id, '#' .. id) end
local seq = redis.call('HINCRBY', K_MCOMP, ' seq', 1)
redis.call('HSET', K_MCOMP, cid, json, '#' .. cid, table.concat({ from_id, to_id, fmt_int(seq), fmt_int(stokens) }, '\t'))
emit('compaction', 'message', cid, json)
finish_write(false, created)
return { 1, json }
