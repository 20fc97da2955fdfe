-- session_meta_prune: drop a session that no longer exists (Redis expired
-- it) from a metadata index, lazily, when a listing met it
-- (sessionstore/metadata.go). Not a session write: the core re-scores and
-- prunes an index only with the writes of the sessions it holds
-- (session.index_in), and a delete takes its session out.
-- KEYS[1] the metadata index (agent_session_meta:... or _global:...)
-- KEYS[2] the session's record  agent_session_record:<tag><u>:<s>
-- ARGV[1] the member (session_id, or "<u>:<s>" in a global index)
-- returns 1 when dropped, 0 when the session exists again (kept).
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[1])
