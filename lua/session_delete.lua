--! prelude: session_lib
-- session_delete: remove the whole session: entries, traces, context, record,
-- qa_id index, usage ids, state, context blocks, frozen prompt, tool calls
-- (SESSION_KEYS), and its place in every index set (status and metadata).
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
unindex()
meta_unindex(meta)
return redis.call('DEL', unpack(SESSION_KEYS))
