-- session_delete: remove the whole session: entries, traces, context, record,
-- qa_id index, usage ids, state, context blocks, frozen prompt, tool calls,
-- messages, compactions and their search documents (session.own_keys(c)), and its
-- place in every index set (status and metadata).
-- The usage totals across sessions keep what it spent (they are all-time
-- counters).
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- The event stream is emptied but for the `deleted` event it gets, kept
-- 300 s (events.TOMBSTONE_SECONDS) so every pod's readers see it.
-- returns (reply.lua) {'ok', the number of the session's own keys
--   removed, purge}, purge 1 when the user's index has documents to purge
--   (search_purge.lua); {'missing'} when there is no such session;
--   {'refused', ...}.
-- Every read before the first write: a record of the wrong type (or with
-- metadata that is not a JSON object of strings, written by hand) has no
-- metadata index to leave, and must not stop the delete half-way.
--- @include reply
--- @include guard
--- @include meta
--- @include session
--- @include events
--- @include search

local c = session.open(KEYS, ARGV)
local metadata = redis.pcall('HGET', c.record, 'metadata')
if type(metadata) ~= 'string' then metadata = nil end
local refused = session.guard(c, 'indexes', unpack(meta.checks(c, metadata)))
if refused then return refused end
if type(metadata) ~= 'string' then
  metadata = nil
else
  local ok, decoded = pcall(cjson.decode, metadata)
  if not ok or type(decoded) ~= 'table' then
    metadata = nil
  else
    for k, v in pairs(decoded) do
      if type(k) ~= 'string' or type(v) ~= 'string' then metadata = nil end
    end
  end
end
-- the session's documents leave the user's index: their hashes become
-- purge keys (search.unindex_all), whose postings the sidecar then
-- removes a bounded step at a time (search_purge.lua)
local indexed = {}
if guard.key_type(c.sstats) == 'hash' then
  for _, k in ipairs({ c.sdocs, c.edocs }) do
    if guard.key_type(k) == 'hash' then indexed[#indexed + 1] = k end
  end
end
session.unindex(c)
meta.unindex(c, metadata)
for _, docs in ipairs(indexed) do search.unindex_all(c, docs) end
local own = {}
for _, k in ipairs(session.own_keys(c)) do
  if k ~= c.events then own[#own + 1] = k end
end
local n = redis.call('DEL', unpack(own)) + #indexed
if n > 0 then
  -- The stream keeps only its `deleted` event, a tombstone for readers on
  -- every pod, for events.TOMBSTONE_SECONDS.
  events.xadd(c, c.events, 'deleted', '{"user_id":' .. cjson.encode(ARGV[3]) .. ',"session_id":' .. cjson.encode(ARGV[4]) .. '}')
  redis.call('XTRIM', c.events, 'MAXLEN', 1)
  redis.call('EXPIRE', c.events, events.TOMBSTONE_SECONDS)
end
if n == 0 then return reply.missing() end
return reply.ok(n, #indexed > 0 and 1 or 0)
