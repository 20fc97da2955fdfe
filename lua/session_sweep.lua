-- session_sweep: drop sessions whose keys Redis expired from the index sets
-- (Redis expiry does not touch sorted sets). Bounded work per call; reads
-- that count or list sessions call it first. No background sweeper.
-- KEYS[1] expiry zset      agent_sessions_global:expiry
-- KEYS[2..4] global index  agent_sessions_global:{running,completed,failed}
-- ARGV[1] the most sessions to look at
-- ARGV[2] the record key prefix  ("agent_session_record:")
-- ARGV[3] the user index prefix  ("agent_sessions_by_user:")
-- returns {sessions dropped, Redis TIME in µs} (the caller's clock for the
--   read that follows, saving it a TIME round trip).
-- The per-session keys it checks are derived from the members: prefix ..
-- "<u>:<s>" and prefix .. "<u>:<status>". On Redis Cluster it runs once per
-- bucket with that bucket's keys and prefixes ("agent_session_record:{b7}:"
-- ...), so every key it derives lies in the bucket's slot (redisstore/keys.go).
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local dropped = 0
for _, gid in ipairs(due) do
  local record = ARGV[2] .. gid
  local pttl = redis.call('PTTL', record)
  if pttl == -2 then
    local user, sid = string.match(gid, '^([^:]*):(.*)$')
    for i = 2, 4 do redis.call('ZREM', KEYS[i], gid) end
    for _, st in ipairs({ 'running', 'completed', 'failed' }) do
      redis.call('ZREM', ARGV[3] .. user .. ':' .. st, sid)
    end
    redis.call('ZREM', KEYS[1], gid)
    dropped = dropped + 1
  elseif pttl == -1 then
    redis.call('ZADD', KEYS[1], '+inf', gid)
  else
    redis.call('ZADD', KEYS[1], now + pttl * 1000, gid)
  end
end
return { dropped, now }
