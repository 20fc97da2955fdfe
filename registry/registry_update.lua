-- registry_update: change a session's title and merge a patch into its
-- metadata (RFC 7396 on a flat map: a key set to null is removed), moving
-- the session between the metadata indexes (registry.lua). Counts as
-- activity.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] title: '' unchanged, 'set' (to ARGV[3]) or 'null' (removed)
-- ARGV[4] metadata patch: '' none, 'null' remove every key, or a JSON
--   object of the keys to set (string values)
-- ARGV[5] the most metadata keys a session may hold
-- ARGV[6..] metadata keys to remove (the patch's nulls)
-- emits session_updated {title, metadata} (both as they are now).
-- returns (reply.lua) {'ok', 'updated', started} updated (started: 1 when
--   this started the session's record, for a session only Cognee wrote,
--   else 0); {'ok', 'too_many_keys'} the patch would leave more than
--   ARGV[5] keys (nothing written: the sidecar answers a 400);
--   {'missing'} no such session (nothing created); {'refused', ...} when
--   a key it would write holds another type (a metadata index it joins) or
--   the user is fenced (nothing written).
--- @include reply
--- @include session
--- @include events
--- @include registry

local c = session.open(KEYS, ARGV)
local refused = session.begin(c, { 'title', 'metadata' })
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local old = c.rec.metadata
local patched = ARGV[4] ~= '' or #ARGV > 5
local had, merged, encoded = registry.pairs_of(old), {}, nil
if patched then
  if old and old ~= '' then merged = cjson.decode(old) end
  if ARGV[4] == 'null' then
    merged = {}
  elseif ARGV[4] ~= '' then
    for k, v in pairs(cjson.decode(ARGV[4])) do merged[k] = v end
  end
  for i = 6, #ARGV do merged[ARGV[i]] = nil end
  local n = 0
  for _ in pairs(merged) do n = n + 1 end
  if n > tonumber(ARGV[5]) then return reply.ok('too_many_keys') end
  if n > 0 then encoded = cjson.encode(merged) end
  registry.index_pairs(c, registry.pairs_of(encoded), had)
end
events.use(c)
refused = session.commit(c)
if refused then return refused end
local f, gone = {}, {}
if patched then
  registry.unindex_pairs(c, had, registry.pairs_of(encoded))
  if encoded then
    f[#f + 1], f[#f + 2] = 'metadata', encoded
  elseif old then
    gone[#gone + 1] = 'metadata'
  end
end
local title = c.rec.title
if ARGV[2] == 'set' then
  title = ARGV[3]
  f[#f + 1], f[#f + 2] = 'title', title
elseif ARGV[2] == 'null' then
  if title then gone[#gone + 1] = 'title' end
  title = nil
end
if #gone > 0 then redis.call('HDEL', c.record, unpack(gone)) end
local meta = old or '{}'
if patched then meta = encoded or '{}' end
events.emit(c, 'session_updated', 'state', nil, '{"title":' .. (title and cjson.encode(title) or 'null') .. ',"metadata":' .. meta .. '}')
local started = session.finish(c, f)
return session.reply(c, reply.ok('updated', started and 1 or 0))
