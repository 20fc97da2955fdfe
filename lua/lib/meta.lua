-- meta: the metadata indexes. A session's metadata (record field
-- 'metadata', a flat JSON string map) is indexed per (key, value) in two
-- sorted sets scored by last activity, like the status indexes: the
-- user's (members session_id) and the bucket's across users (members
-- "<u>:<s>"). Their names follow the record key's tag
-- (redisstore/keys_registry.go builds the same names):
--   agent_session_meta:<tag><u>:<key>=<value>
--   agent_session_meta_global:<tag><key>=<value>
-- Keys are [A-Za-z0-9_.-], so the first '=' ends the key. c is a session
-- context (session.open).

-- names returns the user's and the bucket's index of pair k=v.
local function names(c, k, v)
  return 'agent_session_meta:' .. c.tag .. c.uid .. ':' .. k .. '=' .. v,
    'agent_session_meta_global:' .. c.tag .. k .. '=' .. v
end

-- checks returns the {key, 'zset'} pairs of guard.check for the indexes of
-- the pairs of meta (JSON text, or nil/false: none; text that is no flat
-- string map, written by hand, has no index either).
local function checks(c, meta)
  local out = {}
  if not meta or meta == '' or meta == '{}' then return out end
  local ok, m = pcall(cjson.decode, meta)
  if not ok or type(m) ~= 'table' then return out end
  for k, v in pairs(m) do
    if type(k) == 'string' and type(v) == 'string' then
      local uk, gk = names(c, k, v)
      out[#out + 1] = { uk, 'zset' }
      out[#out + 1] = { gk, 'zset' }
    end
  end
  return out
end

-- expire gives key at least ttl seconds to live (0 = persist): a metadata
-- index lives as long as the longest-lived session it holds. p is the
-- key's PTTL before this write added to it (-2: the write created it). A
-- key without expiry keeps none: a session without expiry (PUT .../ttl 0)
-- holds it, and a TTL set now would expire it under that session. (Once
-- that session gets a TTL again the key stays without one until its
-- members are gone: bounded by them, like the status indexes.)
local function expire(key, ttl, p)
  if ttl == 0 then
    redis.call('PERSIST', key)
  elseif p == -2 or (p >= 0 and p < ttl * 1000) then
    redis.call('EXPIRE', key, ttl)
  end
end

-- PRUNE is how many of an index's least recently active members a write
-- that slides examines (prune).
local PRUNE = 2

-- prune drops from index key up to PRUNE of its least recently active
-- members whose session has expired, as the expiry set tells (no entry, or
-- an expiry before now; the sweep removes the entries of expired
-- sessions), so members of expired sessions do not pile up in an index
-- that is written but seldom read: every sliding write of a session in the
-- index removes up to two, so they go at least as fast as sessions join
-- it. prefix makes a member's "<u>:<s>" (the user's index holds session
-- ids).
local function prune(c, key, now, prefix)
  for _, m in ipairs(redis.call('ZRANGE', key, 0, PRUNE - 1)) do
    local exp = redis.call('ZSCORE', c.expiry, prefix .. m)
    if not exp or (tonumber(exp) or math.huge) < now then redis.call('ZREM', key, m) end
  end
end

-- index files the session under every pair of meta (JSON text, or nil)
-- with score; ttl (or nil: leave the expiry alone) as expire's. With a ttl
-- (a write that slides) it also prunes each index.
local function index(c, meta, score, ttl)
  if not meta or meta == '' or meta == '{}' then return end
  for k, v in pairs(cjson.decode(meta)) do
    local uk, gk = names(c, k, v)
    local pu, pg
    if ttl then
      pu, pg = redis.call('PTTL', uk), redis.call('PTTL', gk)
      prune(c, uk, score, c.uid .. ':')
      prune(c, gk, score, '')
    end
    redis.call('ZADD', uk, score, c.sid)
    redis.call('ZADD', gk, score, c.gid)
    if ttl then
      expire(uk, ttl, pu)
      expire(gk, ttl, pg)
    end
  end
end

-- unindex removes the session from the indexes of the pairs of meta (JSON
-- text or nil) that keep (a table, or nil) does not hold.
local function unindex(c, meta, keep)
  if not meta or meta == '' or meta == '{}' then return end
  for k, v in pairs(cjson.decode(meta)) do
    if not keep or keep[k] ~= v then
      local uk, gk = names(c, k, v)
      redis.call('ZREM', uk, c.sid)
      redis.call('ZREM', gk, c.gid)
    end
  end
end

return {
  names = names,
  checks = checks,
  expire = expire,
  index = index,
  unindex = unindex,
}
