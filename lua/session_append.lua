--! prelude: session_lib
-- session_append: append one Q&A entry to the session, idempotently by qa_id,
-- trim to SESSION_MAX_ENTRIES, slide the TTL of every key of the session and
-- record the activity, all at once.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] qa_id
-- ARGV[6] the entry, as Cognee's json.dumps writes it
-- emits entry_appended (the entry).
-- returns {1} when stored ({2} when this started the session);
--   {0, stored_entry} when the session already held qa_id (a retried
--   append): nothing is written then.
local refused = guard('keep', { K_ENTRIES, 'list' }, { K_INDEX, 'hash' })
if refused then return refused end
local qa_id, entry = ARGV[5], ARGV[6]

local llen = redis.call('LLEN', K_ENTRIES)
local meta = redis.call('HMGET', K_INDEX, '#len', '#last', '#head', qa_id)
if not index_fresh(llen, meta[1], meta[2]) then
  repair_index(llen)
  meta = redis.call('HMGET', K_INDEX, '#len', '#last', '#head', qa_id)
end
if meta[4] then
  local pos, existing = locate(qa_id)
  if pos then return { 0, existing } end
  meta = redis.call('HMGET', K_INDEX, '#len', '#last', '#head', qa_id) -- locate rebuilt it
end

local head = tonumber(meta[3] or '0')
local newlen = redis.call('RPUSH', K_ENTRIES, entry)
redis.call('HSET', K_INDEX, qa_id, tostring(head + newlen - 1), '#len', tostring(newlen), '#last', qa_id)

local removed = trim(K_ENTRIES, newlen)
if #removed > 0 then
  local ids = {}
  for _, el in ipairs(removed) do
    local id = id_of(el, 'qa_id')
    if id then ids[#ids + 1] = id end
  end
  for i = 1, #ids, 1000 do
    redis.call('HDEL', K_INDEX, unpack(ids, i, math.min(i + 999, #ids)))
  end
  redis.call('HSET', K_INDEX, '#head', tostring(head + #removed), '#len', tostring(newlen - #removed))
end

emit('entry_appended', 'entry', qa_id, entry)
local _, started = finish_write(false, newlen == 1, newlen - #removed, newlen == 1)
return { stored_flag(started) }
