-- registry_update: change a session's title and merge a patch into its
-- metadata (RFC 7396 on a flat map: a key set to null is removed), moving
-- the session between the metadata indexes. Counts as activity.
-- KEYS[1..15] the session's keys, indexes and totals (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] title: '' unchanged, 'set' (to ARGV[6]) or 'null' (removed)
-- ARGV[7] metadata patch: '' none, 'null' remove every key, or a JSON
--   object of the keys to set (string values)
-- ARGV[8] the most metadata keys a session may hold
-- ARGV[9..] metadata keys to remove (the patch's nulls)
-- emits session_updated {title, metadata} (both as they are now).
-- returns {'ok', 'updated', started} updated (started: 1 when this
--   started the session's record, for a session only Cognee wrote, else
--   0); {'ok', 'too_many_keys'} the patch would leave more than ARGV[8]
--   keys (nothing written: the sidecar answers a 400); {'missing'} no such
--   session (nothing created); {'refused', 'key_wrong_type', text} when a
--   key it would write holds another type (session.guard; nothing
--   written).
--- @include reply
--- @include meta
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
if not session.exists(c) then return reply.missing() end
local old = redis.call('HGET', c.record, 'metadata')
local patched = ARGV[7] ~= '' or #ARGV > 8
local merged, encoded = {}, nil
if patched then
  if old and old ~= '' then merged = cjson.decode(old) end
  if ARGV[7] == 'null' then
    merged = {}
  elseif ARGV[7] ~= '' then
    for k, v in pairs(cjson.decode(ARGV[7])) do merged[k] = v end
  end
  for i = 9, #ARGV do merged[ARGV[i]] = nil end
  local n = 0
  for _ in pairs(merged) do n = n + 1 end
  if n > tonumber(ARGV[8]) then return reply.ok('too_many_keys') end
  if n > 0 then encoded = cjson.encode(merged) end
end
-- every check before the first write (Redis does not roll back): the
-- indexes of the old pairs (guard reads them) and of the new ones
local refused = session.guard(c, 'keep', unpack(meta.checks(c, encoded)))
if refused then return refused end
if patched then
  meta.unindex(c, old, merged)
  if encoded then
    redis.call('HSET', c.record, 'metadata', encoded)
  else
    redis.call('HDEL', c.record, 'metadata')
  end
end
if ARGV[5] == 'set' then
  redis.call('HSET', c.record, 'title', ARGV[6])
elseif ARGV[5] == 'null' then
  redis.call('HDEL', c.record, 'title')
end
local t = redis.call('HMGET', c.record, 'title', 'metadata')
events.emit(c, 'session_updated', 'state', nil, '{"title":' .. (t[1] and cjson.encode(t[1]) or 'null') .. ',"metadata":' .. (t[2] or '{}') .. '}')
-- a metadata change slides, so new indexes get their TTL at once
local _, started = session.finish_write(c, false, patched)
return reply.ok('updated', started and 1 or 0)
