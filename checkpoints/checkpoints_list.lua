-- checkpoints_list: a page of a thread's (a session's) checkpoints, newest
-- id first, with their metadata, for the sidecar to filter; the
-- checkpoints themselves are read by checkpoints_read. Writes nothing.
-- KEYS[1] the session's record (lib/session.lua; only its user, session
--   and tag are used)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] '1': of namespace ARGV[3] only; '0': of every namespace
-- ARGV[3] checkpoint_ns
-- ARGV[4] before: only ids below it ('' none)
-- ARGV[5] the most checkpoints to answer (at most 100: the sidecar's check)
-- ARGV[6] the most bytes of metadata to answer (the first checkpoint's
--   always): the page ends before the checkpoint that would pass it
-- returns (reply.lua) {'ok', {ns, id, metadata, ...}, more}: more 1 when
--   older checkpoints follow.
-- Bounded: one ZRANGE BYLEX of ARGV[5] + 1 members, an HSTRLEN each and
--   one HMGET of at most ARGV[6] bytes (each metadata up to
--   SESSION_MAX_ITEM_BYTES: a page of 100 would be 100 of them).
--- @include reply
--- @include session
--- @include checkpoints

local c = checkpoints.open(session.open(KEYS, ARGV))
local SEP = checkpoints.SEP
local n = tonumber(ARGV[5])
local p, hi
if ARGV[2] == '1' then
  p = checkpoints.join('c', ARGV[3])
  hi = checkpoints.above(p)
  if ARGV[4] ~= '' then hi = '(' .. p .. SEP .. ARGV[4] end
else
  p = 't'
  hi = checkpoints.above(p)
  if ARGV[4] ~= '' then hi = '(' .. p .. SEP .. ARGV[4] end
end
local members = redis.call('ZRANGE', c.cp_order, hi, '[' .. p .. SEP, 'BYLEX', 'REV', 'LIMIT', 0, n + 1)
local more = 0
if #members > n then
  more = 1
  members[#members] = nil
end
local out, mfields, bytes, cap = {}, {}, 0, tonumber(ARGV[6])
for i, m in ipairs(members) do
  local ns, id
  if ARGV[2] == '1' then
    ns, id = ARGV[3], string.sub(m, #p + 2)
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
