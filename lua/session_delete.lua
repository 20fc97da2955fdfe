--! prelude: session_lib
-- session_delete: remove the whole session: entries, traces, context, record,
-- qa_id index, usage ids, state, context blocks, frozen prompt, tool calls,
-- messages, compactions and their search documents (SESSION_KEYS), and its
-- place in every index set (status and metadata).
-- The usage totals across sessions keep what it spent (they are all-time
-- counters).
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
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
-- the user's search statistics lose the session's indexed messages (their
-- postings go stale and are dropped when a query meets them)
local docs = redis.pcall('HMGET', K_SDOCS, ' n', ' len')
local stats = 'agent_search_stats:' .. META_TAG .. ARGV[3]
local st = redis.call('TYPE', stats)
if type(st) == 'table' then st = st.ok end
unindex()
meta_unindex(meta)
if type(docs) == 'table' and not docs.err and docs[1] and st == 'hash' then
  redis.call('HINCRBY', stats, 'n', -(tonumber(docs[1]) or 0))
  redis.call('HINCRBY', stats, 'len', -(tonumber(docs[2]) or 0))
end
return redis.call('DEL', unpack(SESSION_KEYS))
