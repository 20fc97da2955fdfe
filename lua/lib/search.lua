-- search: the relevance search index (package search) of the user's Q&A
-- entries and messages. c is a session context (session.open).
--- @include json
--- @include clock
--- @include guard
--- @include session
--- @include idindex

-- The sidecar analyses text in Go; a script gets a document as spec
-- "term tf ..." (at most 256 terms), its length and a preview. Per session
-- one hash of documents per kind (c.edocs entries, c.sdocs messages):
-- '<kind>\t<id>' -> "ver\tlength\ttime\tdigest\tspec\tpreview", with ' v',
-- ' n', ' len', and in c.edocs ' cov' = "n\tfingerprint" (the entries
-- list's first n elements are indexed). Per user: the postings
-- agent_search:<tag><u>:<term> (zset "<s>\t<kind>\t<id>\tver\ttf\tlength"
-- by time, µs), the statistics c.sstats (n, len; the on-demand marker; the
-- purge queue) and purge keys (unindex_all, retire, purge_step).

-- wanted is the spec a write indexes: spec as the sidecar sent it, or nil
-- for none. A spec prefixed with '?' (SEARCH_INDEX=on-demand) is indexed
-- only while the user has an index (the statistics hash c.sstats, which
-- the user's first relevance search makes: search_mark): one EXISTS a
-- call, so a user who never searches writes what SEARCH_INDEX=off writes.
local function wanted(c, spec)
  if spec == nil or string.sub(spec, 1, 1) ~= '?' then return spec end
  if c.indexed == nil then c.indexed = redis.call('EXISTS', c.sstats) == 1 end
  if c.indexed then return string.sub(spec, 2) end
  return nil
end

-- hincr adds whole number n to field of hash key; nothing for 0 (Redis
-- refuses the "-0" Lua writes for minus zero) or for what is not a whole
-- number (a count another program spoiled is left as it is, not failed on).
local function hincr(key, field, n)
  n = tonumber(n)
  if not n or n == 0 or n ~= math.floor(n) or math.abs(n) >= 2 ^ 53 then return end
  local r = redis.pcall('HINCRBY', key, field, string.format('%d', n))
  if type(r) == 'table' and r.err and not string.find(r.err, 'not an integer', 1, true)
      and not string.find(r.err, 'overflow', 1, true) then
    error(r) -- anything but the spoiled count (the key's type is checked before)
  end
end

-- stats_drop takes n documents of length len out of the user's search
-- statistics, when they still exist (never creating a key without a TTL).
local function stats_drop(c, n, len)
  if redis.call('EXISTS', c.sstats) == 1 then
    hincr(c.sstats, 'n', -n)
    hincr(c.sstats, 'len', -len)
  end
end

-- index_expire gives an index key at least ttl seconds to live (0 =
-- persist), like meta_expire: p is the key's PTTL before this write added
-- to it (-2: the write created it). A key without expiry keeps none (a
-- session without expiry holds it). The EXPIRE is skipped while the key
-- has more than ttl less min(60 s, ttl/1000) left (the session keys' slide
-- rule): an append then costs one PTTL per term, not two commands.
local function index_expire(key, ttl, p)
  if ttl == 0 then
    if p ~= -1 then redis.call('PERSIST', key) end
    return
  end
  local slack = math.min(60, math.floor(ttl / 1000))
  if p == -2 or (p >= 0 and p < (ttl - slack) * 1000) then redis.call('EXPIRE', key, ttl) end
end

-- check_terms is guard's check of the postings keys the documents of batch
-- ({spec=} each: "term tf ...") would write: nil, or the refusal. O(terms).
local function check_terms(c, batch)
  for _, m in ipairs(batch) do
    for t in string.gmatch(m.spec or '', '(%S+) %d+') do
      local key = c.search_prefix .. t
      local got = guard.key_type(key)
      if got ~= 'none' and got ~= 'zset' then
        return guard.refusal(key, got, 'zset')
      end
    end
  end
  return nil
end

-- parse_doc splits a stored document: ver, length, time, digest, spec
-- and preview (spec nil for a document an older sidecar stored without
-- it: its postings are left for the queries to drop).
local function parse_doc(v)
  local ver, l, at, dg, spec, p = string.match(v or '', '^(%d+)\t(%d+)\t(%d+)\t(%x+)\t([^\t]*)\t(.*)$')
  if ver then return ver, tonumber(l), at, dg, spec, p end
  ver, l, at, dg, p = string.match(v or '', '^(%d+)\t(%d+)\t(%d+)\t(%x*)\t?(.*)$')
  return ver, tonumber(l or '0'), at, dg, nil, p
end

-- drop_postings removes exactly the postings of session sid's document
-- doc ('<kind>\t<id>') stored as v: one ZREM per term (at most 256; a
-- postings key left empty goes with it). Returns the terms touched.
local function drop_postings(c, sid, doc, v)
  local ver, len, _, _, spec = parse_doc(v)
  if not spec then return 0 end
  local member, n = sid .. '\t' .. doc .. '\t' .. ver .. '\t', 0
  for t, tf in string.gmatch(spec, '(%S+) (%d+)') do
    redis.call('ZREM', c.search_prefix .. t, member .. tf .. '\t' .. len)
    n = n + 1
  end
  return n
end

-- unindex_doc takes document kind/id out of docs, the session's documents
-- of that kind, with exactly its postings.
local function unindex_doc(c, docs, kind, id)
  local doc = kind .. '\t' .. id
  local old = redis.call('HGET', docs, doc)
  if not old then return end
  local len = tonumber(string.match(old, '^%d+\t(%d+)') or '0')
  drop_postings(c, c.sid, doc, old)
  redis.call('HDEL', docs, doc)
  hincr(docs, ' n', -1)
  hincr(docs, ' len', -len)
  stats_drop(c, 1, len)
end

-- write_postings adds to the postings of each term of spec the posting of
-- this session's document doc at version v (length len, scored by time at,
-- µs), giving each key at least ttl (index_expire). O(terms).
local function write_postings(c, doc, v, spec, len, at, ttl)
  local member = c.sid .. '\t' .. doc .. '\t' .. v .. '\t'
  for t, tf in string.gmatch(spec, '(%S+) (%d+)') do
    local key = c.search_prefix .. t
    local p = redis.call('PTTL', key)
    redis.call('ZADD', key, at, member .. tf .. '\t' .. len)
    index_expire(key, ttl, p)
  end
end

-- spec_digest identifies a document's terms and frequencies (a refresh
-- tells an unchanged document by it).
local function spec_digest(spec)
  return string.sub(redis.sha1hex(spec), 1, 16)
end

-- index_doc puts document kind/id in the index, docs being the session's
-- documents of that kind: spec "term tf term tf ...", its length and
-- preview, at time now (µs: its postings' score, newest first). An empty
-- spec (no searchable word) takes the document out. O(terms), at most 256.
-- posted: the postings the script already added as its first writes
-- (session_append: they check the postings keys' types themselves, with
-- nothing written when one refuses): {v = the version they carry,
-- fresh = docs held no version yet, p = {postings key -> its PTTL before}};
-- index_doc then writes the rest and gives those keys their TTLs.
local function index_doc(c, docs, kind, id, spec, len, preview, now, posted)
  unindex_doc(c, docs, kind, id)
  if spec == '' then return end
  local ttl = session.ttl(c)
  local ver
  if posted then
    ver = posted.v
    redis.call('HSET', docs, ' v', string.format('%d', ver))
    if posted.fresh and ttl > 0 then redis.call('EXPIRE', docs, ttl) end
  else
    ver = redis.call('HINCRBY', docs, ' v', 1)
  end
  if ver == 1 then
    -- a new hash of documents: versions start at the clock (µs), so a
    -- version is never reused after the hash was dropped and made again
    -- (a stale posting must not match a later document)
    ver = clock.now_us()
    redis.call('HSET', docs, ' v', string.format('%d', ver))
    -- it lives as long as the session, whether or not this write slides
    -- the session's TTLs
    if ttl > 0 then redis.call('EXPIRE', docs, ttl) end
  end
  local doc = kind .. '\t' .. id
  local v, at = string.format('%d', ver), string.format('%d', now)
  redis.call('HSET', docs, doc, v .. '\t' .. len .. '\t' .. at .. '\t' .. spec_digest(spec) .. '\t' .. spec .. '\t' .. preview)
  hincr(docs, ' n', 1)
  hincr(docs, ' len', len)
  local ps = redis.call('PTTL', c.sstats)
  hincr(c.sstats, 'n', 1)
  hincr(c.sstats, 'len', len)
  if posted then
    for key, p in pairs(posted.p) do index_expire(key, ttl, p) end
  else
    write_postings(c, doc, v, spec, len, at, ttl)
  end
  index_expire(c.sstats, ttl, ps)
end

-- refresh_doc writes the postings of document kind/id again as they are
-- (same version, length and time: ZADD of the same members, so a posting
-- that expired comes back and none is added twice), with the session's
-- TTL, when the stored document is spec's (its digest, length and
-- preview); returns false (nothing written) when it is not: the text
-- changed, the caller indexes it anew.
local function refresh_doc(c, docs, kind, id, spec, len, preview)
  local doc = kind .. '\t' .. id
  local v, l, at, dg, sp, p = parse_doc(redis.call('HGET', docs, doc))
  if not v or not sp or l ~= len or dg ~= spec_digest(spec) or p ~= preview then return false end
  local ttl = session.ttl(c)
  write_postings(c, doc, v, spec, l, at, ttl)
  index_expire(c.sstats, ttl, redis.call('PTTL', c.sstats))
  return true
end

-- unindex_all takes every document of docs (one kind, the session's) out
-- of the index in O(1): the user's statistics lose them and the hash is
-- renamed to a purge key of the user (agent_search_purge:<tag><u>:<n>,
-- keeping its TTL, with ' sid' the session), queued in the statistics'
-- 'purge' field; purge_step then removes its documents' postings and
-- itself a bounded step at a time (search_purge.lua).
local function unindex_all(c, docs)
  local agg = redis.call('HMGET', docs, ' n', ' len')
  local n, len = tonumber(agg[1] or '0') or 0, tonumber(agg[2] or '0') or 0
  if n ~= 0 or len ~= 0 then stats_drop(c, n, len) end
  if n == 0 or redis.call('EXISTS', c.sstats) == 0 then
    redis.call('UNLINK', docs)
    return
  end
  local seq = redis.call('HINCRBY', c.sstats, 'purge_seq', 1)
  local id = string.format('%d', seq)
  redis.call('HSET', docs, ' sid', c.sid)
  redis.call('RENAME', docs, session.user_key(c, 'agent_search_purge') .. ':' .. id)
  local q = redis.call('HGET', c.sstats, 'purge')
  if q and q ~= '' then id = q .. ' ' .. id end
  redis.call('HSET', c.sstats, 'purge', id)
end

-- retire takes the documents fields ('<kind>\t<id>' each) out of docs,
-- the session's documents of one kind, in O(#fields) commands whatever
-- their terms: the user's statistics lose them and they move to a new
-- purge key (as unindex_all's), whose postings purge_step removes later.
-- Without the statistics (no index) they are only deleted.
local function retire(c, docs, fields)
  if #fields == 0 then return end
  local vals = redis.call('HMGET', docs, unpack(fields))
  local moved, n, len = { ' sid', c.sid }, 0, 0
  for i, f in ipairs(fields) do
    if vals[i] then
      moved[#moved + 1], moved[#moved + 2] = f, vals[i]
      n, len = n + 1, len + (tonumber(string.match(vals[i], '^%d+\t(%d+)') or '0') or 0)
    end
  end
  if n == 0 then return end
  redis.call('HDEL', docs, unpack(fields))
  hincr(docs, ' n', -n)
  hincr(docs, ' len', -len)
  stats_drop(c, n, len)
  if redis.call('EXISTS', c.sstats) == 0 then return end
  local id = string.format('%d', redis.call('HINCRBY', c.sstats, 'purge_seq', 1))
  local key = session.user_key(c, 'agent_search_purge') .. ':' .. id
  redis.call('HSET', key, unpack(moved))
  local ttl = session.ttl(c)
  if ttl > 0 then redis.call('EXPIRE', key, ttl) end
  local q = redis.call('HGET', c.sstats, 'purge')
  if q and q ~= '' then id = q .. ' ' .. id end
  redis.call('HSET', c.sstats, 'purge', id)
end

local PURGE_SCAN = 16 -- the fields a purge step asks HSCAN for

-- purge_step removes the postings and documents of the user's purge keys
-- (unindex_all) for about budget commands (ZREM a term, HDEL a document,
-- HSCAN a page; past it by one document's terms): whether more is left.
-- A purge key gone (expired) leaves the queue; one emptied is deleted.
local function purge_step(c, budget)
  local q = redis.call('HGET', c.sstats, 'purge') or ''
  local touched, dropped = 0, 0
  while q ~= '' and touched < budget do
    local id = string.match(q, '^(%d+)')
    local key = session.user_key(c, 'agent_search_purge') .. ':' .. (id or '')
    local done = not id or redis.call('EXISTS', key) == 0
    if not done then
      local meta = redis.call('HMGET', key, ' sid', ' cur')
      local sid, cur = meta[1] or '', meta[2] or '0'
      local r = redis.call('HSCAN', key, cur, 'COUNT', PURGE_SCAN)
      local f, cut = r[2], false
      touched = touched + 1
      for i = 1, #f, 2 do
        if string.sub(f[i], 1, 1) ~= ' ' then
          -- past the budget: the page's rest next step, from this cursor
          cut = dropped > 0 and touched >= budget
          if cut then break end
          touched = touched + 1 + drop_postings(c, sid, f[i], f[i + 1])
          dropped = dropped + 1
          redis.call('HDEL', key, f[i])
        end
      end
      if cut then r[1] = cur end -- ' cur' stays
      if r[1] == '0' then
        -- a pass ended (it met every document: none is added to a purge
        -- key): done when only fields that are not documents are left
        local META = { ' sid', ' cur', ' v', ' n', ' len', ' cov', ' since', ' refresh', ' mseq' }
        local m = redis.call('HMGET', key, unpack(META))
        local kept = 0
        for i = 1, #META do if m[i] then kept = kept + 1 end end
        done = redis.call('HLEN', key) <= kept
        if done then redis.call('DEL', key) else redis.call('HDEL', key, ' cur') end
      else
        redis.call('HSET', key, ' cur', r[1])
      end
    end
    if done then q = string.match(q, '^%d*%s*(.*)$') end
  end
  if q == '' then redis.call('HDEL', c.sstats, 'purge') else redis.call('HSET', c.sstats, 'purge', q) end
  return q ~= ''
end

-- entries_cov is c.edocs's ' cov': the number of leading elements of the
-- entries list the index has taken in, the fingerprint of the last of them
-- ('' for none), ' since': when (µs) the index last began taking the
-- list in from its first element (nil: never), and whether a refresh walk
-- is under way (' refresh').
local function entries_cov(c)
  local v = redis.call('HMGET', c.edocs, ' cov', ' since', ' refresh')
  local n, fp = string.match(v[1] or '', '^(%d+)\t(.*)$')
  return tonumber(n or '0'), fp or '', tonumber(v[2] or ''), v[3] ~= false and v[3] ~= nil
end

local function set_cov(c, n, fp)
  redis.call('HSET', c.edocs, ' cov', string.format('%d', n) .. '\t' .. fp)
end

-- cov_valid: the first n elements of the entries list are still the ones
-- the index took in (the last of them has fingerprint fp). One LINDEX.
local function cov_valid(c, n, fp)
  return n == 0 or idindex.fingerprint('qa', redis.call('LINDEX', c.entries, n - 1)) == fp
end

-- refresh_due: the index began taking the entries in more than half the
-- session's TTL ago, so the user's postings of its older entries may
-- expire before the session: session_search_pending then takes every entry
-- in again (each document's postings written anew, with the TTL).
local function refresh_due(c, since)
  local ttl = session.ttl(c)
  return since ~= nil and ttl > 0 and clock.now_us() - since > ttl * 500000
end

-- entries_removed keeps the entries' index right after the first k
-- elements of the entries list were trimmed: removed holds their bytes
-- when they were read (their documents leave the index), nil when not.
-- When the index cannot stay right (the elements were not read, or it no
-- longer described the list), the session's entries are dropped from it,
-- to be taken in again a step at a time by session_search_catchup: returns
-- true then, and when the trimmed documents await their purge (retire).
local function entries_removed(c, k, removed)
  if redis.call('EXISTS', c.edocs) == 0 then return false end
  local n, fp = entries_cov(c)
  if not removed or (n > 0 and n <= k and idindex.fingerprint('qa', removed[n]) ~= fp) then
    unindex_all(c, c.edocs)
    return true
  end
  local fields = {}
  for _, el in ipairs(removed) do
    local id = json.id_of(el, 'qa_id')
    if id then fields[#fields + 1] = 'entry\t' .. id end
  end
  retire(c, c.edocs, fields)
  local purging = #fields > 0 and redis.call('HEXISTS', c.sstats, 'purge') == 1
  -- past the trimmed ones, the covered prefix keeps its last element (a
  -- fingerprint that no longer matches is found by the next catch-up)
  if n > k then set_cov(c, n - k, fp) elseif n > 0 then set_cov(c, 0, '') end
  return purging
end

-- entry_gone keeps the entries' covered prefix right after the sidecar
-- removed the element at pos: valid is cov_valid(c) as it was before the
-- removal (an invalid prefix is left as it is, for the next catch-up to
-- find).
local function entry_gone(c, pos, valid)
  local n, fp = entries_cov(c)
  if not valid or pos >= n then return end
  if n == 1 then
    set_cov(c, 0, '')
  elseif pos == n - 1 then
    set_cov(c, n - 1, idindex.fingerprint('qa', redis.call('LINDEX', c.entries, pos - 1)))
  else
    set_cov(c, n - 1, fp)
  end
end

return {
  wanted = wanted,
  hincr = hincr,
  stats_drop = stats_drop,
  index_expire = index_expire,
  check_terms = check_terms,
  parse_doc = parse_doc,
  drop_postings = drop_postings,
  unindex_doc = unindex_doc,
  purge_step = purge_step,
  retire = retire,
  write_postings = write_postings,
  index_doc = index_doc,
  refresh_doc = refresh_doc,
  unindex_all = unindex_all,
  entries_cov = entries_cov,
  set_cov = set_cov,
  cov_valid = cov_valid,
  refresh_due = refresh_due,
  entries_removed = entries_removed,
  entry_gone = entry_gone,
}
