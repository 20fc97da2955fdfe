--! prelude: session_lib
-- session_end: mark the session completed or failed (ended_at from Redis
-- TIME). Activity after the end is still recorded but never reopens it.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] 'completed' or 'failed'
-- returns 1 when ended now; 2 when it had already ended with this status
--   (nothing written); {3, status} when it had ended with the other one
--   (nothing written); 0 when there is no such session (nothing created).
local refused = guard('move')
if refused then return refused end
local want = ARGV[5]
if not session_exists() then return 0 end
local status = redis.call('HGET', K_RECORD, 'status')
if status == want then return 2 end
if status == 'completed' or status == 'failed' then return { 3, status } end
local now = now_us()
if status then
  redis.call('HSET', K_RECORD, 'status', want, 'ended_at', string.format('%d', now))
else -- a session only Cognee wrote: it started with its first entry
  redis.call('HSET', K_RECORD, 'status', want, 'ended_at', string.format('%d', now), 'started_at', started_at_of(now))
end
finish_write(true)
return 1
