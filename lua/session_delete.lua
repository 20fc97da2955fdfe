--! prelude: session_lib
-- session_delete: remove the whole session: entries, traces, context, record,
-- qa_id index, usage ids, state, context blocks, frozen prompt, tool calls,
-- messages, compactions and their search documents (SESSION_KEYS), and its
-- place in every index set (status and metadata).
-- The usage totals across sessions keep what it spent (they are all-time
-- counters).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- The event stream is emptied but for the `deleted` event it gets, kept
-- 300 s (EVENTS_TOMBSTONE_SECONDS) so every pod's readers see it.
-- returns the number of the session's own keys removed (0: no such session).
-- Every read before the first write: a record of the wrong type (or with
-- metadata that is not a JSON object of strings, written by hand) has no
-- metadata index to leave, and must not stop the delete half-way.
local meta = redis.pcall('HGET', K_RECORD, 'metadata')
if type(meta) ~= 'string' then meta = nil end
local refused = guard('indexes', unpack(meta_checks(meta)))
if refused then return refused end
if type(meta) ~= 'string' then
  meta = nil
else
  local ok, decoded = pcall(cjson.decode, meta)
  if not ok or type(decoded) ~= 'table' then
    meta = nil
  else
    for k, v in pairs(decoded) do
      if type(k) ~= 'string' or type(v) ~= 'string' then meta = nil end
    end
  end
end
-- the user's search statistics lose the session's indexed messages and
-- entries (their postings go stale and are dropped when a query meets them)
local indexed = {}
for i, k in ipairs({ K_SDOCS, K_EDOCS }) do indexed[i] = redis.pcall('HMGET', k, ' n', ' len') end
local st = key_type(K_SSTATS)
unindex()
meta_unindex(meta)
for _, docs in ipairs(indexed) do
  if type(docs) == 'table' and not docs.err and docs[1] and st == 'hash' then
    hincr(K_SSTATS, 'n', -(tonumber(docs[1]) or 0))
    hincr(K_SSTATS, 'len', -(tonumber(docs[2]) or 0))
  end
end
local own = {}
for _, k in ipairs(SESSION_KEYS) do
  if k ~= K_EVENTS then own[#own + 1] = k end
end
local n = redis.call('DEL', unpack(own))
if n > 0 then
  -- The stream keeps only its `deleted` event, a tombstone for readers on
  -- every pod, for EVENTS_TOMBSTONE_SECONDS.
  xadd(K_EVENTS, 'deleted', '{"user_id":' .. cjson.encode(ARGV[3]) .. ',"session_id":' .. cjson.encode(ARGV[4]) .. '}')
  redis.call('XTRIM', K_EVENTS, 'MAXLEN', 1)
  redis.call('EXPIRE', K_EVENTS, EVENTS_TOMBSTONE_SECONDS)
end
return n
