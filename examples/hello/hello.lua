-- Counts one more greeting for a user and keeps the counter alive for a day.
-- KEYS[1] = the user's counter (hello.counterKey)
-- ARGV[1] = the counter's TTL in seconds, slid on every call
-- returns the count after this call
local n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return n
