-- checkpoints_list: a page of a thread's (a session's) checkpoints, newest
-- id first, with their metadata, for the sidecar to filter; the
-- checkpoints themselves are read by checkpoints_read. Writes nothing.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] '1': of namespace ARGV[6] only; '0': of every namespace
-- ARGV[6] checkpoint_ns
-- ARGV[7] before: only ids below it ('' none)
-- ARGV[8] the most checkpoints to answer (at most 100: the sidecar's check)
-- ARGV[9] the most bytes of metadata to answer (the first checkpoint's
--   always): the page ends before the checkpoint that would pass it
-- returns (reply.lua) {'ok', {ns, id, metadata, ...}, more}: more 1 when
--   older checkpoints follow.
-- Bounded: one ZRANGE BYLEX of ARGV[8] + 1 members, an HSTRLEN each and
--   one HMGET of at most ARGV[9] bytes (each metadata up to
--   SESSION_MAX_ITEM_BYTES: a page of 100 would be 100 of them).
--- @include reply
--- @include session
--- @include checkpoints

local c = checkpoints.open(session.open(KEYS, ARGV))
local SEP = checkpoints.SEP
local n = tonumber(ARGV[8])
local p, hi
if ARGV[5] == '1' then
  p = checkpoints.join('c', ARGV[6])
  hi = checkpoints.above(p)
  if ARGV[7] ~= '' then hi = '(' .. p .. SEP .. ARGV[7] end
else
  p = 't'
  hi = checkpoints.above(p)
  if ARGV[7] ~= '' then hi = '(' .. p .. SEP .. ARGV[7] end
end
local members = redis.call('ZRANGE', c.cp_order, hi, '[' .. p .. SEP, 'BYLEX', 'REV', 'LIMIT', 0, n + 1)
local more = 0
if #members > n then
  more = 1
  members[#members] = nil
end
local out, mfields, bytes, cap = {}, {}, 0, tonumber(ARGV[9])
for i, m in ipairs(members) do
  local ns, id
  if ARGV[5] == '1' then
    ns, id = ARGV[6], string.sub(m, #p + 2)
  else
    local rest = string.sub(m, #p + 2)
    local at = string.find(rest, SEP, 1, true)
    id, ns = string.sub(rest, 1, at - 1), string.sub(rest, at + 1)
  end
  local mf = checkpoints.join('m', ns, id)
  bytes = bytes + redis.call('HSTRLEN', c.cp_hash, mf)
  if i > 1 and bytes > cap then
    more = 1
    break
  end
  out[#out + 1] = ns
  out[#out + 1] = id
  mfields[i] = mf
end
if #mfields > 0 then
  local metas = redis.call('HMGET', c.cp_hash, unpack(mfields))
  for i = 1, #mfields do table.insert(out, i * 3, metas[i] or '{}') end
end
return reply.ok(out, more)
