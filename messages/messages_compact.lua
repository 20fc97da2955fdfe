-- messages_compact: store a compaction of the range from..to (from an
-- ancestor of, or equal to, to): reads of a path through it show one
-- synthetic system message holding the summary instead of the range. A
-- compaction whose range covers earlier ones supersedes them (they are
-- deleted); one that partly overlaps one in force is refused. A range that
-- holds a tool message without the message carrying its call, or a call
-- without its result, is refused. O(range + compactions × log n).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the compaction's id
-- ARGV[3] the summary as a JSON string
-- ARGV[4] from_id, ARGV[5] to_id
-- ARGV[6] the summary's tokens
-- ARGV[7] the most compactions in force per session
-- returns (reply.lua) {'ok', 'compacted', compaction JSON}; with nothing
--   written, {'ok', 'invalid_range', why}, {'ok', 'splits_tool_call', the
--   call id}, {'refused', code, text} for 'compaction_overlap' (a
--   compaction in force partly overlaps), 'too_many_compactions' and
--   'key_wrong_type'.
--- @include reply
--- @include json
--- @include clock
--- @include session
--- @include events
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local node, ancestor, fmt_int = msgtree.node, msgtree.ancestor, msgtree.fmt_int
local cid, summary, from_id, to_id, stokens, max = ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local refused = msgtree.begin(c)
if refused then return refused end
local from, to
if session.has(c, msgtree.MTREE) then from, to = node(c, from_id), node(c, to_id) end
if not from then return reply.ok('invalid_range', 'the session has no message ' .. from_id) end
if not to then return reply.ok('invalid_range', 'the session has no message ' .. to_id) end
if from.depth > to.depth or ancestor(c, to, from.depth).id ~= from.id then
  return reply.ok('invalid_range', from_id .. ' is not an ancestor of ' .. to_id .. ' (after it, or on another branch)')
end

-- tool calls and results inside the range pair up
local calls, results = {}, {}
local v = to
while true do
  local m = redis.call('HGET', c.msgs, v.id) or '{}'
  if json.id_of(m, 'role') == 'tool' then
    local r = json.id_of(m, 'tool_call_id')
    if r then results[r] = true end
  end
  local raw = string.find(m, '"tool_calls"', 1, true) and json.field_raw(m, 'tool_calls')
  if raw then
    local ok, list = pcall(cjson.decode, raw)
    if ok and type(list) == 'table' then
      for _, call in ipairs(list) do
        if type(call) == 'table' and type(call.id) == 'string' then calls[call.id] = true end
      end
    end
  end
  if v.id == from.id then break end
  v = node(c, v.parent)
end
for r in pairs(results) do
  if not calls[r] then return reply.ok('splits_tool_call', r) end
end
for call in pairs(calls) do
  if not results[call] then return reply.ok('splits_tool_call', call) end
end

-- the compactions in force: superseded (inside the new range) or apart
local superseded, kept = {}, 0
for _, cp in ipairs(messages.compactions(c)) do
  local cf, ct = node(c, cp.from), node(c, cp.to)
  if cf and ct then
    local lo, hi = math.max(from.depth, cf.depth), math.min(to.depth, ct.depth)
    local meet = lo <= hi and ancestor(c, to, lo).id == ancestor(c, ct, lo).id
    if meet then
      local inside = cf.depth >= from.depth and ct.depth <= to.depth and ancestor(c, to, ct.depth).id == ct.id
      if not inside then
        return reply.refused('compaction_overlap', 'the range partly overlaps compaction ' .. cp.id ..
          ' in force (a compaction may cover earlier ones whole, never in part); nothing was written')
      end
      superseded[#superseded + 1] = cp.id
    else
      kept = kept + 1
    end
  end
end
if kept + 1 > max then
  return reply.refused('too_many_compactions', 'the session holds ' .. fmt_int(max) ..
    ' compactions in force, the most it may; cover some with a wider one')
end

-- the writes
session.use(c, msgtree.MCOMP, 'hash')
events.use(c)
refused = session.commit(c)
if refused then return refused end
local text = '{"id":"' .. cid .. '","summary":' .. summary .. ',"from_id":"' .. from_id .. '","to_id":"' .. to_id ..
  '","created_at":"' .. clock.iso_time(session.now(c)) .. '"}'
for _, id in ipairs(superseded) do redis.call('HDEL', c.mcomp, id, '#' .. id) end
local seq = redis.call('HINCRBY', c.mcomp, ' seq', 1)
redis.call('HSET', c.mcomp, cid, text, '#' .. cid, table.concat({ from_id, to_id, fmt_int(seq), fmt_int(stokens) }, '\t'))
events.emit(c, 'compaction', 'message', cid, text)
session.finish(c)
return session.reply(c, reply.ok('compacted', text))
