-- ring: the one idempotency ring. A retried write (the same
-- Idempotency-Key, tool_call_id, ...) finds what the first one stored, so
-- it writes nothing again. A ring is a hash that keeps the size newest
-- keys: field ' n' counts the keys stored, field ' <n mod size>' names the
-- key stored n-th, which the next key of that slot evicts (a leading space
-- cannot start a key). Each script keeps its ring in one of the session's
-- own keys, so it slides and is deleted with the session.
--
-- A tagged ring stores "value \t slot" and evicts the key of a slot only
-- when the key was not stored again in a later slot since (a key whose
-- write is gone, stored anew); an untagged one stores the value as it is
-- (its keys are never stored twice).

-- get returns what key was stored with in ring hash (put), or nil.
local function get(hash, key, tagged)
  local held = redis.call('HGET', hash, key)
  if tagged and held then return string.match(held, '^(.*)\t%d+$') or held end
  return held
end

-- put stores key -> value in ring hash of size keys, evicting the oldest;
-- kept is the ' n' the caller read (nil: read here). Returns whether it
-- created the hash.
local function put(hash, key, value, size, tagged, kept)
  if not kept then kept = tonumber(redis.call('HGET', hash, ' n') or '0') or 0 end
  local n = string.format('%d', kept % size)
  local slot = ' ' .. n
  local evict = redis.call('HGET', hash, slot)
  if evict then
    if tagged then
      local held = redis.call('HGET', hash, evict)
      local at = held and string.match(held, '\t(%d+)$')
      if held and (not at or at == n) then redis.call('HDEL', hash, evict) end
    else
      redis.call('HDEL', hash, evict)
    end
  end
  if tagged then value = value .. '\t' .. n end
  redis.call('HSET', hash, key, value, slot, key, ' n', string.format('%d', kept + 1))
  return kept == 0
end

return { get = get, put = put }
