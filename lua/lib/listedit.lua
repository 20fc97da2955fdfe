-- listedit: the trims and removals of the sessions module's lists (the
-- entries, traces and context lists Cognee shares) that keep their id
-- indexes right (lib/idindex.lua). c is a context idindex.open made ready.
--- @include json
--- @include session
--- @include idindex

-- trim keeps about the newest c.max_entries of list key (0 = unbounded) in
-- batches: a list longer than 1.25 x c.max_entries is cut back to the newest
-- c.max_entries, so the positions of the elements shift once per quarter of
-- c.max_entries appends, not on every append (Cognee updates an entry with
-- LSET at the position it read). which names the list's index, if it has
-- one: the trimmed ids leave it when they fit in one step, else the index
-- is dropped (later calls make it again, a step at a time). llen is the
-- list's length when the caller knows it. Returns the number removed, and
-- the removed elements when it read them (for the index), else nil.
local function trim(c, key, llen, which)
  if c.max_entries <= 0 then return 0 end
  llen = llen or redis.call('LLEN', key)
  if llen * 4 <= c.max_entries * 5 then return 0 end
  local k = llen - c.max_entries
  if which then
    local _, index, idkey = idindex.index_keys(c, which)
    local m = redis.call('HMGET', index, '#len', '#head')
    local covered, head = tonumber(m[1] or ''), tonumber(m[2] or '0')
    local removed = covered and covered > k and idindex.read_range(key, 0, k - 1) or {}
    if #removed == k then
      local ids = {}
      for _, el in ipairs(removed) do
        local id = json.id_of(el, idkey)
        if id then ids[#ids + 1] = id end
      end
      for i = 1, #ids, 1000 do
        redis.call('HDEL', index, unpack(ids, i, math.min(i + 999, #ids)))
      end
      redis.call('LTRIM', key, k, -1)
      redis.call('HSET', index, '#head', string.format('%d', head + k), '#len', tostring(covered - k),
        '#first', idindex.fingerprint(which, redis.call('LINDEX', key, 0)))
      return k, removed
    end
    redis.call('UNLINK', index)
  end
  redis.call('LTRIM', key, k, -1)
  return k
end

-- remove_at deletes the element el at pos of list which (llen elements
-- long), found there by locate, and keeps its index: the elements on the shorter
-- side of pos within the covered prefix are renumbered when they fit in
-- one step, else the index is dropped (later calls make it again, a step
-- at a time). LREM scans from the nearer end.
local function remove_at(c, which, pos, el, llen)
  local list, index, idkey = idindex.index_keys(c, which)
  local m = redis.call('HMGET', index, '#len', '#head')
  local covered, head = tonumber(m[1] or ''), tonumber(m[2] or '0')
  local renumber, from, to = nil, 0, -1
  if covered and pos < covered and pos > 0 and pos < covered - 1 then
    if covered - 1 - pos <= pos then
      from, to = pos + 1, covered - 1 -- these move up by one
    else
      from, to = 0, pos - 1 -- these keep their place; the head moves
    end
    renumber = idindex.read_range(list, from, to)
    if #renumber ~= to - from + 1 then renumber = nil end
  end
  redis.call('LSET', list, pos, session.TOMBSTONE)
  redis.call('LREM', list, (pos * 2 < llen) and 1 or -1, session.TOMBSTONE)
  if not covered or pos >= covered then return end -- no index, or nothing moved in its prefix
  if llen == 1 or covered == 1 then -- it covered the removed element alone
    redis.call('UNLINK', index)
    return
  end
  local id = json.id_of(el, idkey)
  if id and tonumber(redis.call('HGET', index, id) or '') == head + pos then redis.call('HDEL', index, id) end
  if pos == 0 then
    redis.call('HSET', index, '#head', string.format('%d', head + 1), '#len', tostring(covered - 1),
      '#first', idindex.fingerprint(which, redis.call('LINDEX', list, 0)))
  elseif pos == covered - 1 then
    redis.call('HSET', index, '#len', tostring(covered - 1),
      '#last', idindex.fingerprint(which, redis.call('LINDEX', list, covered - 2)))
  elseif not renumber then
    redis.call('UNLINK', index)
  elseif from > 0 then
    idindex.index_put(c, which, renumber, pos, head)
    redis.call('HSET', index, '#len', tostring(covered - 1))
  else
    idindex.index_put(c, which, renumber, 0, head + 1)
    redis.call('HSET', index, '#head', string.format('%d', head + 1), '#len', tostring(covered - 1))
  end
end

return {
  trim = trim,
  remove_at = remove_at,
}
