-- search: the relevance search index (package search) of the user's Q&A
-- entries and messages. c is a session context (session.open).
--- @include json
--- @include clock
--- @include guard
--- @include session
--- @include idindex

-- The sidecar analyses text in Go; a script gets a document as spec
-- "term tf ..." (at most 256 terms) and its length. The index of a
-- session's documents of one kind is one hash, a session key (c.edocs
-- entries, c.sdocs messages): it slides, ends and goes with the session,
-- so nothing of a deleted or expired session stays behind. Its fields:
--   '#<num>'  document num: "length\ttime (µs)\tterm term ...\tid"
--   '=<id>'   the number of document id
--   '<term>'  its postings " num[:tf] num[:tf] ... ", oldest first, at
--             most MAX_POSTINGS_BYTES (the oldest go)
--   ' n', ' len', ' seq'  documents, their total length, the last number
--   ' cov'    (entries) "n\tfingerprint": the entries list's first n
--             elements are taken in; ' mseq' (messages) the catch-up's cursor
-- A term is letters and digits, so the three kinds of fields never meet.
-- Per user: c.slist, the sessions holding documents by when they last
-- changed (µs), which a user-wide search reads newest first (a key the
-- user's marker keeps: session.keep); and the on-demand marker, the field
-- search of the user's marker (c.marks.search), which search_mark sets
-- with its build cursor's hash (agent_search_stats).

-- A word's postings in one session's hash are at most MAX_POSTINGS_BYTES:
-- every posting of a document rewrites its words' values (one HMGET, one
-- HSET), so their size bounds an append's work (BENCHMARKS.md, "the worst
-- indexed append"). Past it the older half goes at once (no count of the
-- postings on every write): a word keeps its newest 200 to 400 or so in a
-- session. A query still takes up to 2 000 of a word across sessions.
local MAX_POSTINGS_BYTES = 2048
-- a removal of documents holding more postings than this drops the whole
-- hash instead (the catch-up takes the rest in again, a bounded step at a
-- time)
local RETIRE_TERMS = 256
-- the most sessions c.slist keeps (twice the sessions a user-wide search
-- reads, search.MaxSearchSessions): past it the least recently changed go,
-- at most LIST_TRIM a write, so the list of an active user whose sessions
-- come and expire stays bounded
local MAX_LISTED = 2000
local LIST_TRIM = 64

-- wanted is the spec a write indexes: spec as the sidecar sent it, or nil
-- for none. A spec prefixed with '?' (SEARCH_INDEX=on-demand) is indexed
-- only while the user has an index (the marker's field search, which the
-- user's first relevance search sets: search_mark; read with the record),
-- so a user who never searches writes what SEARCH_INDEX=off writes. '?!': the
-- sidecar sent no document (it believes the user has none: search.Probe);
-- when the user has one, c.search_pending is set (the write answers it,
-- and the catch-up indexes what it stored).
local function wanted(c, spec)
  if spec == nil or string.sub(spec, 1, 1) ~= '?' then return spec end
  if not c.marks.search then return nil end
  if spec == '?!' then
    c.search_pending = true
    return nil
  end
  return string.sub(spec, 2)
end

-- The families (redisstore/families.go): the session's documents of
-- entries and of messages, the user's list of sessions with documents.
local ENTRY_DOCS, DOCS, SESSIONS = 'agent_search_entry_docs', 'agent_search_docs', 'agent_search_sessions'

-- read_docs reads docs's ' cov' and ' seq' (what current and
-- entries_cov read) once a call; before the write's first write, so that
-- a hash of another type refuses the write (a pcall: the refusal is
-- returned) with nothing written.
local function read_docs(c, docs)
  c.search_read = c.search_read or {}
  if c.search_read[docs] then return nil end
  local v = redis.pcall('HMGET', docs, ' cov', ' seq')
  if v.err then return guard.from_error(docs, 'hash', v) end
  c.search_read[docs] = v
  return nil
end

-- prepare declares the keys a write that indexes documents of kind
-- ('entries' or 'messages') writes, before session.commit: the session's
-- documents of that kind (c.edocs or c.sdocs) and the user's list
-- (c.slist); and reads them (their types checked there). Returns the
-- refusal of a key of another type, or nil.
local function prepare(c, kind)
  local docs
  if kind == 'entries' then
    c.edocs = session.use(c, ENTRY_DOCS, 'hash', true)
    docs = c.edocs
  else
    c.sdocs = session.use(c, DOCS, 'hash', true)
    docs = c.sdocs
  end
  c.slist = session.keep(c, session.user_key(c, SESSIONS))
  local n = redis.pcall('ZCARD', c.slist)
  if type(n) == 'table' then return guard.from_error(c.slist, 'zset', n) end
  c.slist_n = n
  -- a list or documents another program removed are made anew: they get
  -- their TTL then
  if n == 0 then session.user_made(c, c.slist) end
  local refused = read_docs(c, docs)
  if refused then return refused end
  local v = c.search_read[docs]
  if not v[1] and not v[2] then session.made(c, kind == 'entries' and ENTRY_DOCS or DOCS) end
  return nil
end

-- expire_at_least gives key at least ttl seconds to live (0: persist), p
-- being its PTTL before this write (-2: the write made it): skipped while
-- it has more than ttl less min(60 s, ttl/1000) left (the session keys'
-- slide rule).
local function expire_at_least(key, ttl, p)
  if ttl == 0 then
    if p ~= -1 then redis.call('PERSIST', key) end
    return
  end
  local slack = math.min(60, math.floor(ttl / 1000))
  if p == -2 or (p >= 0 and p < (ttl - slack) * 1000) then redis.call('EXPIRE', key, ttl) end
end

-- foreign: a hash whose ' seq' (as read) is not a number HINCRBY takes is
-- not one this index wrote (another program spoiled it): index_doc's
-- HINCRBY would fail the script half-way, after the write's own first
-- writes (current, entries_cov).
local function foreign(seq)
  return seq and not (string.match(seq, '^%d+$') and #seq <= 15) or false
end

-- current drops docs when it is foreign: the catch-up takes the session in
-- again (c.search_dropped is set then: a messages write answers it, for
-- the sidecar to queue that catch-up). Once a call.
local function current(c, docs)
  c.search_seen = c.search_seen or {}
  if c.search_seen[docs] then return end
  c.search_seen[docs] = true
  local read = c.search_read and c.search_read[docs]
  local seq
  if read then seq = read[2] else seq = redis.call('HGET', docs, ' seq') end
  if foreign(seq) then
    redis.call('UNLINK', docs)
    c.search_dropped = true
    -- the hash the write makes again (index_doc, set_cov) is new: finish
    -- gives it its TTL (a quiet write slides nothing, and a write within
    -- the grain only the keys it made)
    session.made(c, docs == c.edocs and ENTRY_DOCS or DOCS)
  end
end

-- without is postings v without document num's posting: nil when it
-- holds none (or v is nil); ' ' when none is left.
local function without(v, num)
  local s = v and string.find(v, ' ' .. num .. '[: ]')
  if not s then return nil end
  local e = string.find(v, ' ', s + 1, true)
  return string.sub(v, 1, s - 1) .. string.sub(v, e)
end

-- with is postings v (nil: none yet) with document num's posting (term
-- frequency tf) appended; past MAX_POSTINGS_BYTES the older half goes.
local function with(v, num, tf)
  if tf ~= '1' then num = num .. ':' .. tf end
  v = (v or ' ') .. num .. ' '
  if #v > MAX_POSTINGS_BYTES then
    -- from the first space of the newer half (one argument: string.find
    -- also answers the match's end, which string.sub would cut at)
    local s = string.find(v, ' ', #v - MAX_POSTINGS_BYTES / 2, true)
    v = string.sub(v, s)
  end
  return v
end

-- counted appends to set (an HSET's field value list) the counts ' n' and
-- ' len' (as read: n, l) moved by dn and dl; a count another program
-- spoiled (not a whole number) is left as it is.
local function counted(set, n, l, dn, dl)
  for _, f in ipairs({ { ' n', n, dn }, { ' len', l, dl } }) do
    local v = tonumber(f[2] or '0')
    if v and v == math.floor(v) and math.abs(v) < 2 ^ 52 and f[3] ~= 0 then
      set[#set + 1], set[#set + 2] = f[1], string.format('%d', v + f[3])
    end
  end
end

-- parse_doc splits a document record: length, time, terms, id.
local function parse_doc(v)
  local l, at, terms, id = string.match(v or '', '^(%d+)\t(%d+)\t([^\t]*)\t(.*)$')
  return tonumber(l), at, terms, id
end

-- unindex_doc takes document id out of docs (a session's index of one
-- kind) with exactly its postings: four commands whatever its terms (at
-- most 256); a term left without postings goes.
local function unindex_doc(c, docs, id)
  current(c, docs)
  local num = redis.call('HGET', docs, '=' .. id)
  if not num then return end
  local len, _, terms = parse_doc(redis.call('HGET', docs, '#' .. num))
  local f = { ' n', ' len' }
  for t in string.gmatch(terms or '', '%S+') do f[#f + 1] = t end
  local v = redis.call('HMGET', docs, unpack(f))
  local set, del = {}, { '#' .. num, '=' .. id }
  for i = 3, #f do
    local p = without(v[i], num) -- nil: dropped already as one of the oldest
    if p == ' ' then
      del[#del + 1] = f[i]
    elseif p then
      set[#set + 1], set[#set + 2] = f[i], p
    end
  end
  counted(set, v[1], v[2], -1, -(len or 0))
  if #set > 0 then redis.call('HSET', docs, unpack(set)) end
  redis.call('HDEL', docs, unpack(del))
end

-- listed files the session in the user's c.slist (newest first for a
-- user-wide search) and trims it towards MAX_LISTED (its TTL is the
-- marker's to keep: prepare). Once a call.
local function listed(c)
  if c.search_listed then return end
  c.search_listed = true
  local added = redis.call('ZADD', c.slist, session.now(c), c.sid)
  session.member_of(c, c.slist, true)
  local over = (c.slist_n and c.slist_n + added or redis.call('ZCARD', c.slist)) - MAX_LISTED
  if over > 0 then redis.call('ZREMRANGEBYRANK', c.slist, 0, math.min(over, LIST_TRIM) - 1) end
end

-- index_doc puts document id in docs, the session's index of its kind:
-- spec "term tf term tf ...", its length, its time at (µs: newest first in
-- results). An empty spec (no searchable word) takes the document out.
-- A handful of commands whatever its terms (at most 256): one HMGET of
-- their postings and one HSET of them with the document's record.
local function index_doc(c, docs, id, spec, len, at)
  unindex_doc(c, docs, id)
  if spec == '' then return end
  local num = string.format('%d', redis.call('HINCRBY', docs, ' seq', 1))
  local f, tfs = { ' n', ' len' }, {}
  for t, tf in string.gmatch(spec, '(%S+) (%d+)') do f[#f + 1], tfs[#f + 1] = t, tf end
  local v = redis.call('HMGET', docs, unpack(f))
  len = tonumber(len) or 0
  local set = { '#' .. num, string.format('%d\t%d\t', len, at) .. table.concat(f, ' ', 3) .. '\t' .. id, '=' .. id, num }
  for i = 3, #f do set[#set + 1], set[#set + 2] = f[i], with(v[i], num, tfs[i]) end
  counted(set, v[1], v[2], 1, len)
  redis.call('HSET', docs, unpack(set))
  listed(c)
end

-- unindex_all takes every document of docs (one kind, the session's) out
-- of the index: O(1), the hash freed off Redis's main thread.
local function unindex_all(c, docs)
  redis.call('UNLINK', docs)
  session.drop(c, docs == c.edocs and ENTRY_DOCS or DOCS)
end

-- retire takes documents ids out of docs, the session's index of one kind;
-- when they hold more than RETIRE_TERMS postings in all, the whole hash goes
-- instead (unindex_all): returns true then (the catch-up has the rest to
-- take in again, a bounded step at a time).
local function retire(c, docs, ids)
  if #ids == 0 then return false end
  current(c, docs)
  local fields = {}
  for i, id in ipairs(ids) do fields[i] = '=' .. id end
  local nums, held = {}, {}
  for i, num in ipairs(#ids <= RETIRE_TERMS and redis.call('HMGET', docs, unpack(fields)) or {}) do
    if num then nums[#nums + 1], held[#held + 1] = '#' .. num, ids[i] end
  end
  local terms = #ids
  if #nums > 0 and terms <= RETIRE_TERMS then
    terms = 0
    for _, d in ipairs(redis.call('HMGET', docs, unpack(nums))) do
      local _, _, t = parse_doc(d)
      terms = terms + 1 + #string.gsub(t or '', '%S', '')
    end
  end
  if terms > RETIRE_TERMS then
    unindex_all(c, docs)
    return true
  end
  for _, id in ipairs(held) do unindex_doc(c, docs, id) end
  return false
end

-- entries_cov is c.edocs's ' cov': the number of leading elements of the
-- entries list the index has taken in, and the fingerprint of the last of
-- them ('' for none); 0 and spoiled true for a hash this index did not
-- write (foreign: the catch-up drops it and takes the list in again).
-- Reads only.
local function entries_cov(c)
  -- read_docs's read, once: the write's own later steps read anew
  local v = c.search_read and c.search_read[c.edocs]
  if v then c.search_read[c.edocs] = false else v = redis.call('HMGET', c.edocs, ' cov', ' seq') end
  if foreign(v[2]) then return 0, '', true end
  local n, fp = string.match(v[1] or '', '^(%d+)\t(.*)$')
  return tonumber(n or '0'), fp or '', false
end

local function set_cov(c, n, fp)
  if not session.has(c, ENTRY_DOCS) then c.edocs = session.use(c, ENTRY_DOCS, 'hash') end
  redis.call('HSET', c.edocs, ' cov', string.format('%d', n) .. '\t' .. fp)
end

-- cov_valid: the first n elements of the entries list are still the ones
-- the index took in (the last of them has fingerprint fp). One LINDEX.
local function cov_valid(c, n, fp)
  return n == 0 or idindex.fingerprint('qa', redis.call('LINDEX', c.entries, n - 1)) == fp
end

-- entries_removed keeps the entries' index right after the first k
-- elements of the entries list were trimmed: removed holds their bytes
-- when they were read (their documents leave the index), nil when not.
-- When the index cannot stay right (the elements were not read, or it no
-- longer described the list), the session's entries are dropped from it,
-- to be taken in again a step at a time by session_search_catchup: returns
-- true then.
local function entries_removed(c, k, removed)
  if not session.has(c, ENTRY_DOCS) then return false end
  c.edocs = session.key(c, ENTRY_DOCS)
  local n, fp = entries_cov(c)
  if not removed or (n > 0 and n <= k and idindex.fingerprint('qa', removed[n]) ~= fp) then
    unindex_all(c, c.edocs)
    return true
  end
  local ids = {}
  for _, el in ipairs(removed) do ids[#ids + 1] = json.id_of(el, 'qa_id') end
  if retire(c, c.edocs, ids) then return true end
  -- past the trimmed ones, the covered prefix keeps its last element (a
  -- fingerprint that no longer matches is found by the next catch-up)
  if n > k then set_cov(c, n - k, fp) elseif n > 0 then set_cov(c, 0, '') end
  return false
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
  ENTRY_DOCS = ENTRY_DOCS,
  DOCS = DOCS,
  SESSIONS = SESSIONS,
  prepare = prepare,
  read_docs = read_docs,
  wanted = wanted,
  current = current,
  unindex_doc = unindex_doc,
  index_doc = index_doc,
  unindex_all = unindex_all,
  retire = retire,
  entries_cov = entries_cov,
  set_cov = set_cov,
  cov_valid = cov_valid,
  entries_removed = entries_removed,
  entry_gone = entry_gone,
}
