-- session_usage: add one LLM call's tokens and cost to the session record,
-- its per-model breakdown, the all-time totals and the day's per-model
-- totals, once per Idempotency-Key.
-- KEYS[1] the session's record (lib/session.lua); the bucket's totals
--   agent_usage_totals and the day's per-model totals
--   agent_usage_by_model:<tag><YYYY-MM-DD> (UTC, from Redis TIME) are in
--   its slot (session.bucket_key)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] model (as the caller named it)
-- ARGV[3] input tokens, ARGV[4] output tokens (integers >= 0)
-- ARGV[5] cost in nano-USD (integer >= 0: integer sums stay exact)
-- ARGV[6] 1 when the call failed, else 0
-- ARGV[7] idempotency key, or '' for none (the 1000 newest are kept)
-- ARGV[8] the result to answer (and to answer again for a repeated key)
-- ARGV[9] most distinct models of a session; later new names count as 'other'
-- ARGV[10] most distinct models of a day's hash; later new names count as 'other'
-- ARGV[11] TTL in seconds of a day's hash (set on every write to it)
-- emits usage (ARGV[11], the answer).
-- returns (reply.lua) {'ok', started} when counted (started 1 when this
--   started the session); {'dup', first_result} for a key already seen in
--   this session; and, with nothing written, {'refused', 'key_wrong_type',
--   ...} when a key or field it would write holds the wrong type,
--   {'refused', 'usage_overflow', ...} when a sum would pass 9e18 (int64
--   holds 9.22e18).
--
-- Redis does not roll back a script that fails half-way: every read and
-- check comes first, then the writes, which cannot fail any more; the
-- idempotency key is stored after the sums it stands for.
--- @include reply
--- @include clock
--- @include guard
--- @include ring
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local model, tin, tout, nano, failed, key, result = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local max_session_models, max_day_models, day_ttl = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11]
local USAGE_IDS = 'agent_session_usage_ids'
local totals = session.bucket_key(c, 'agent_usage_totals')
local OTHER = 'other'
local MAX_SUM = 9e18
local MAX_KEYS = 1000 -- idempotency keys remembered per session

-- utc_date is the UTC calendar date of unix time sec.
local function utc_date(sec)
  return string.format('%04d-%02d-%02d', clock.civil_date(sec))
end

local rec_fields = { 'tokens_in', 'tokens_out', 'cost_nano_usd', 'calls', 'error_count', 'model_count' }
for _, m in ipairs({ model, 'other' }) do
  for _, f in ipairs({ 'tokens_in', 'tokens_out', 'cost_nano_usd' }) do
    rec_fields[#rec_fields + 1] = 'model:' .. m .. ':' .. f
  end
end
local refused = session.begin(c, rec_fields) -- a fenced user writes nothing
if refused then return refused end
local K_DAY = session.bucket_key(c, 'agent_usage_by_model', utc_date(math.floor(session.now(c) / 1000000)))

-- wrong_field refuses what text describes.
local function wrong_field(text)
  return reply.refused('key_wrong_type', text .. ' (another program wrote it); nothing was written: fix or delete that key')
end

-- Reads of a key of the wrong type fail (WRONGTYPE): they go through
-- pcall, and such a key is refused by name before anything is written.
local function wrong_type(k, want)
  return wrong_field(guard.describe(k, want) or ('Redis key ' .. k .. ' cannot be read'))
end

-- 1. A repeated key counts nothing. The hash is a ring (ring.lua) of the
-- MAX_KEYS newest keys (keys are printable ASCII without spaces).
local kept = 0
local usage_ids = session.key(c, USAGE_IDS)
if key ~= '' then
  usage_ids = session.use(c, USAGE_IDS, 'hash', true)
  local v = redis.pcall('HMGET', usage_ids, key, ' n')
  if v.err then return wrong_type(usage_ids, 'hash') end
  if v[1] then return session.reply(c, reply.dup(v[1])) end
  if v[2] and not string.match(v[2], '^%d+$') then
    return wrong_field(string.format('field " n" of Redis key %s is not an integer', usage_ids))
  end
  kept = tonumber(v[2] or '0')
end

-- 2. One read per hash of every field this call may add to, for the name
-- as sent and for 'other' (the record's: session.begin).
local day_fields = { '#models' }
for _, m in ipairs({ model, OTHER }) do
  for _, f in ipairs({ 'tokens_in', 'tokens_out', 'cost_nano_usd' }) do
    day_fields[#day_fields + 1] = m .. '\t' .. f
  end
  day_fields[#day_fields + 1] = m .. '\tcalls'
  day_fields[#day_fields + 1] = m .. '\terrors'
end
local cur = { [c.record] = c.rec }
for _, r in ipairs({
  { totals, { 'tokens_in', 'tokens_out', 'cost_nano_usd', 'calls', 'errors' } },
  { K_DAY, day_fields },
}) do
  local v = redis.pcall('HMGET', r[1], unpack(r[2]))
  if v.err then return wrong_type(r[1], 'hash') end
  local m = {}
  for i, f in ipairs(r[2]) do m[f] = v[i] end
  cur[r[1]] = m
end
-- 3. The name to count under: a new name past the cap counts as 'other'.
-- marker is the field that exists once the name is counted in h.
local function fold(h, marker, count_field, cap)
  if model == OTHER or cur[h][marker] then return model, 0 end
  local n = tonumber(cur[h][count_field] or '0') or 0
  if n >= cap then return OTHER, 0 end
  return model, 1
end
local smodel, snew = fold(c.record, 'model:' .. model .. ':tokens_in', 'model_count', max_session_models)
local dmodel, dnew = fold(K_DAY, model .. '\tcalls', '#models', max_day_models)

-- 4. Every sum it adds to, checked: an integer now, and within MAX_SUM after.
-- Each add is {field, increment}; increments of 0 are not written, except
-- the per-model fields, whose presence marks a counted name.
local err = failed == '1' and 1 or 0
local sm, dm = 'model:' .. smodel .. ':', dmodel .. '\t'
local adds = {
  { c.record, {
    { 'tokens_in', tin }, { 'tokens_out', tout }, { 'cost_nano_usd', nano }, { 'calls', 1 },
    { 'error_count', err }, { 'model_count', snew },
    { sm .. 'tokens_in', tin, true }, { sm .. 'tokens_out', tout, true }, { sm .. 'cost_nano_usd', nano, true },
  } },
  { totals, {
    { 'tokens_in', tin }, { 'tokens_out', tout }, { 'cost_nano_usd', nano }, { 'calls', 1 }, { 'errors', err },
  } },
  { K_DAY, {
    { dm .. 'tokens_in', tin, true }, { dm .. 'tokens_out', tout, true }, { dm .. 'cost_nano_usd', nano, true },
    { dm .. 'calls', 1 }, { dm .. 'errors', err }, { '#models', dnew },
  } },
}
for _, h in ipairs(adds) do
  for _, a in ipairs(h[2]) do
    local cv = cur[h[1]][a[1]]
    if cv and not string.match(cv, '^%-?%d+$') then
      return wrong_field(string.format('field %s of Redis key %s is not an integer', a[1], h[1]))
    end
    if tonumber(cv or '0') + tonumber(a[2]) > MAX_SUM then
      return reply.refused('usage_overflow', string.format('usage not counted: field %s of Redis key %s would pass %.0f; nothing was written', a[1], h[1], MAX_SUM))
    end
  end
end

events.use(c)
refused = session.commit(c)
if refused then return refused end

-- 5. The writes.
for _, h in ipairs(adds) do
  for _, a in ipairs(h[2]) do
    if a[3] or tonumber(a[2]) ~= 0 then redis.call('HINCRBY', h[1], a[1], a[2]) end
  end
end
redis.call('EXPIRE', K_DAY, day_ttl)
if key ~= '' and ring.put(usage_ids, key, result, MAX_KEYS, false, kept) then session.made(c, USAGE_IDS) end

events.emit(c, 'usage', 'state', nil, result)
local started = session.finish(c, { 'last_model', model })
return session.reply(c, reply.ok(started and 1 or 0))
