-- session_read: a bounded read of one of a session's lists (entries,
-- traces, context) in one atomic step, so a read beside concurrent writes
-- sees the list as it was at one moment. The work is bounded whatever the
-- list holds: at most n elements, read a page at a time, stopping before
-- the answer would pass max_bytes.
-- KEYS[1] the list
-- ARGV[1] n: how many elements at most
-- ARGV[2] max_bytes: the answer's cap (each element counts its length + 1)
-- ARGV[3] 'last': the newest n (read from the right), or 'first': the
--   oldest n (read from the left)
-- ARGV[4] page: the most elements per LRANGE; fewer once the elements read
--   so far are big (about 1 MiB per LRANGE), 16 to start with
-- returns {truncated (0 or 1), element...} with the elements in list order;
--   truncated is 1 when the byte cap cut the answer, or ('first') when more
--   than n elements remain
local key, n, max_bytes, from, page = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local got, size, truncated = {}, 2, 0
local per = 16
while #got < n and truncated == 0 do
  if #got > 0 then
    per = math.floor(1048576 / math.max(1, math.floor(size / #got)))
  end
  local want = math.max(1, math.min(page, per, n - #got))
  local vals
  if from == 'last' then
    vals = redis.call('LRANGE', key, -#got - want, -#got - 1)
  else
    vals = redis.call('LRANGE', key, #got, #got + want - 1)
  end
  local first, last, step = 1, #vals, 1
  if from == 'last' then first, last, step = #vals, 1, -1 end
  for i = first, last, step do
    size = size + #vals[i] + 1
    if size > max_bytes then
      truncated = 1
      break
    end
    got[#got + 1] = vals[i]
  end
  if #vals < want then break end
end
-- 'first' asked for at most n: more left is a cut too.
if truncated == 0 and from == 'first' and #got == n and redis.call('LLEN', key) > n then
  truncated = 1
end
local out = { truncated }
if from == 'last' then
  for i = #got, 1, -1 do out[#out + 1] = got[i] end
else
  for i = 1, #got do out[#out + 1] = got[i] end
end
return out
