--! prelude: session_lib
-- session_usage: add one LLM call's tokens and cost to the session record,
-- its per-model breakdown and the all-time totals, once per Idempotency-Key.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] model (as the caller named it)
-- ARGV[6] input tokens, ARGV[7] output tokens (integers >= 0)
-- ARGV[8] cost in nano-USD (integer >= 0: integer sums stay exact)
-- ARGV[9] 1 when the call failed, else 0
-- ARGV[10] idempotency key, or '' for none
-- ARGV[11] the result to answer (and to answer again for a repeated key)
-- returns {1} when counted ({2} when this started the
--   session); {0, first_result} for a key already seen in this session
--   (nothing is counted then).
local model, tin, tout, nano, failed, key, result = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11]
local created = false
if key ~= '' then
  local first = redis.call('HGET', K_USAGE, key)
  if first then return { 0, first } end
  redis.call('HSET', K_USAGE, key, result)
  created = redis.call('HLEN', K_USAGE) == 1
end

local m = 'model:' .. model .. ':'
redis.call('HINCRBY', K_RECORD, 'tokens_in', tin)
redis.call('HINCRBY', K_RECORD, 'tokens_out', tout)
redis.call('HINCRBY', K_RECORD, 'cost_nano_usd', nano)
redis.call('HINCRBY', K_RECORD, 'calls', 1)
redis.call('HINCRBY', K_RECORD, m .. 'tokens_in', tin)
redis.call('HINCRBY', K_RECORD, m .. 'tokens_out', tout)
redis.call('HINCRBY', K_RECORD, m .. 'cost_nano_usd', nano)
redis.call('HSET', K_RECORD, 'last_model', model)
if failed == '1' then redis.call('HINCRBY', K_RECORD, 'error_count', 1) end

redis.call('HINCRBY', K_TOTALS, 'tokens_in', tin)
redis.call('HINCRBY', K_TOTALS, 'tokens_out', tout)
redis.call('HINCRBY', K_TOTALS, 'cost_nano_usd', nano)
redis.call('HINCRBY', K_TOTALS, 'calls', 1)
redis.call('HINCRBY', K_BY_MODEL, model .. '\ttokens_in', tin)
redis.call('HINCRBY', K_BY_MODEL, model .. '\ttokens_out', tout)
redis.call('HINCRBY', K_BY_MODEL, model .. '\tcost_nano_usd', nano)
redis.call('HINCRBY', K_BY_MODEL, model .. '\tcalls', 1)
if failed == '1' then
  redis.call('HINCRBY', K_TOTALS, 'errors', 1)
  redis.call('HINCRBY', K_BY_MODEL, model .. '\terrors', 1)
end

local _, started = finish_write(false, created)
return { stored_flag(started) }
