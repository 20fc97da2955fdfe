-- idindex: the sessions module's lists (Cognee's entries, traces and
-- session context) and the id indexes of two of them (see below). c is a
-- session context (session.open) that idindex.open has made ready.
--- @include json
--- @include clock
--- @include guard
--- @include session

-- The module's key families (redisstore/families.go).
local ENTRIES, TRACES, CONTEXT = 'agent_sessions', 'agent_traces', 'session_context'
local QA_INDEX, CTX_INDEX = 'agent_session_qa_index', 'agent_session_context_index'

-- open gives c the entries list's keys (c.entries, c.qa_index) and
-- SESSION_MAX_ENTRIES (c.max_entries; text, 0 = unbounded), and returns it.
local function open(c, max_entries)
  c.entries, c.qa_index = ENTRIES .. ':' .. c.id, QA_INDEX .. ':' .. c.id
  c.max_entries = tonumber(max_entries) or 0
  return c
end

-- lists gives c the keys of the traces and context lists and the context
-- index too (c.traces, c.context, c.ctx_index), and returns it.
local function lists(c)
  if not c.context then
    c.traces, c.context, c.ctx_index = TRACES .. ':' .. c.id, CONTEXT .. ':' .. c.id, CTX_INDEX .. ':' .. c.id
  end
  return c
end

-- index_prefix is the family of index which's hash.
local function index_prefix(which)
  if which == 'qa' then return QA_INDEX end
  return CTX_INDEX
end

-- Two lists have an id index, a hash the scripts that write them keep:
--   'qa'      the entries list (c.entries) by qa_id: c.qa_index
--   'context' the context list (c.context) by "id": c.ctx_index,
--             agent_session_context_index:<tag><u>:<s> (c.ctx_index)
-- An index maps id -> absolute sequence number (position + '#head', the
-- number of elements trimmed from the left since the index was made) and
-- describes a prefix of the list: '#len' = L, the positions [0, L) it
-- covers, and '#first' and '#last' the fingerprints of the elements at 0
-- and L-1. It is valid while the list still starts with that prefix (at
-- least L long, the same fingerprints at 0 and L-1), and complete when L
-- is the list's length: then an id it lacks is absent from the list.
--
-- Why a valid index can be trusted: another writer (Cognee) appends
-- (RPUSH), updates an element in place (LSET, same entry, same position)
-- and deletes by rewriting the list (DEL, then RPUSH of the survivors).
-- Deleting an element of the prefix makes the list shorter than L or puts
-- a later element, or a new one, at L-1; a Q&A entry's fingerprint is its
-- qa_id and its "time", and every entry Cognee creates has a new time, so
-- the fingerprint at L-1 changes. A context entry has no time: its
-- fingerprint is its bytes, so an update in place of the first or last
-- one by another writer also reads as a rewrite (a rebuild, never a wrong
-- answer); only a writer that deletes entries and then re-creates the
-- last one byte for byte, and the first unchanged, goes unseen.
--
-- When the list grew past L (another writer appended), the index is
-- extended over the new elements; when it is not valid (a rewrite), it is
-- dropped and made again from position 0. Either way one script indexes at
-- most INDEX_STEP elements and about INDEX_STEP_BYTES, so no script does
-- work that grows with the list: a script that needs the index complete
-- and finds it is not answers {'index_build', which} before its first
-- write, and the caller runs session_index_build.lua (one bounded step
-- each) until the index is complete, then runs the script again. A hit is
-- always checked against the element it points at, so a partial index
-- answers every id it holds.

-- INDEX_STEP bounds the elements one script indexes or renumbers, and
-- INDEX_STEP_BYTES (about) the bytes it reads for that; INDEX_PAGE is the
-- first LRANGE's size, later ones sized to about 256 KiB.
local INDEX_STEP, INDEX_STEP_BYTES, INDEX_PAGE = 256, 1048576, 16

-- index_keys returns the list, index and id field of index which.
local function index_keys(c, which)
  if which == 'qa' then return c.entries, c.qa_index, 'qa_id' end
  lists(c)
  return c.context, c.ctx_index, 'id'
end

-- fingerprint is what identifies element el (nil: '') of list which: a Q&A
-- entry's qa_id and time (neither changes on update), a context entry's
-- bytes (a long one by its length, head and tail).
local function fingerprint(which, el)
  if not el then return '' end
  if which == 'qa' then
    -- Cognee and the sidecar write "time" first: one match then
    local t = string.match(el, '^{"time": "([^"]*)"')
    if not t then
      local at = string.find(el, '"time"', 1, true)
      t = at and string.match(el, '^%s*:%s*"([^"]*)"', at + 6) or ''
    end
    return (json.id_of(el, 'qa_id') or '') .. ' ' .. t
  end
  if #el > 8192 then el = #el .. string.sub(el, 1, 4096) .. string.sub(el, -4096) end
  return redis.sha1hex(el)
end

-- read_range reads elements [from, to] of list, a page at a time, until it
-- holds INDEX_STEP elements or about INDEX_STEP_BYTES: the elements read
-- (fewer than asked when the budget ran out).
local function read_range(list, from, to)
  local out, bytes, per = {}, 0, INDEX_PAGE
  while from <= to and #out < INDEX_STEP and bytes < INDEX_STEP_BYTES do
    if #out > 0 then per = math.floor(262144 / math.max(1, math.floor(bytes / #out))) end
    local want = math.max(1, math.min(per, INDEX_STEP - #out, to - from + 1))
    local page = redis.call('LRANGE', list, from, from + want - 1)
    for _, el in ipairs(page) do
      out[#out + 1] = el
      bytes = bytes + #el
    end
    if #page < want then break end
    from = from + want
  end
  return out
end

local function hset_chunks(key, args)
  for i = 1, #args, 1000 do
    local chunk = {}
    for j = i, math.min(i + 999, #args) do chunk[#chunk + 1] = args[j] end
    redis.call('HSET', key, unpack(chunk))
  end
end

-- index_put maps the ids of els, the elements from position pos on, to
-- their sequence numbers (base + position).
local function index_put(c, which, els, pos, base)
  local _, index, idkey = index_keys(c, which)
  local args = {}
  for i, el in ipairs(els) do
    local id = json.id_of(el, idkey)
    if id then
      args[#args + 1] = id
      args[#args + 1] = string.format('%d', base + pos + i - 1)
    end
  end
  if #args > 0 then hset_chunks(index, args) end
end

-- index_sync makes one bounded step towards an index of list which that
-- covers its llen (> 0) elements: checks it is valid (else drops it), then
-- indexes at most one step of the elements it does not cover. Returns
-- whether the index is complete now and, when it was complete and valid as
-- read (no step taken), what it read: {'#len', '#last', '#first', '#head',
-- id} (id's field when id is given); or guard's refusal when the index is
-- not a hash.
local function index_sync(c, which, llen, id)
  local list, index = index_keys(c, which)
  local m
  if id then
    m = redis.pcall('HMGET', index, '#len', '#last', '#first', '#head', id)
  else
    m = redis.pcall('HMGET', index, '#len', '#last', '#first', '#head')
  end
  if m.err then return guard.from_error(index, 'hash', m) end
  local covered, head = tonumber(m[1] or ''), tonumber(m[4] or '0')
  if not covered or covered < 1 or covered > llen or not head
      or fingerprint(which, redis.call('LINDEX', list, covered == llen and -1 or covered - 1)) ~= m[2]
      or fingerprint(which, redis.call('LINDEX', list, 0)) ~= m[3] then
    -- not the prefix it describes (or none): made again from position 0;
    -- UNLINK frees a big hash off Redis's main thread
    if redis.call('EXISTS', index) == 1 then redis.call('UNLINK', index) end
    covered, head = 0, 0
  end
  if covered == llen then return true, m end
  local els = read_range(list, covered, llen - 1)
  index_put(c, which, els, covered, head)
  local n = covered + #els
  local meta = { '#len', tostring(n), '#last', fingerprint(which, els[#els]) }
  if covered == 0 then
    meta[#meta + 1], meta[#meta + 2] = '#first', fingerprint(which, els[1])
    meta[#meta + 1], meta[#meta + 2] = '#head', '0'
  end
  redis.call('HSET', index, unpack(meta))
  if covered == 0 then
    -- a new index must not outlive its list, whether or not this script
    -- slides the session's TTLs (an index step of a read, of a session
    -- only Cognee wrote, makes no record)
    local pttl = redis.call('PTTL', list)
    if pttl > 0 then redis.call('PEXPIRE', index, pttl) end
  end
  return n == llen
end

-- needs_build is the answer of a script that needs index which complete
-- and could not make it so in one step; it has written nothing but index
-- steps.
local function needs_build(which)
  return { 'index_build', which }
end

-- locate finds the element whose id is id in list which: returns its
-- position (0-based), bytes and the list's length; nil, nil, the length
-- and the index's {'#len', '#last', '#first', '#head'} (when read before
-- any step, else nil) when the list holds no such element;
-- needs_build(which) when that cannot be told within one step; or guard's
-- refusal when the list or its index has another type (read before any
-- write: a script that locates before its first write need not ask guard
-- about them). llen is the list's length when the caller has it.
local function locate(c, which, id, llen)
  local list, index, idkey = index_keys(c, which)
  if not llen then
    llen = redis.pcall('LLEN', list)
    if type(llen) == 'table' then return guard.from_error(list, 'list', llen) end
  end
  if llen == 0 then
    -- another writer emptied the list: no index outlives it
    if redis.call('EXISTS', index) == 1 then
      local n = redis.pcall('HLEN', index)
      if type(n) == 'table' then return guard.from_error(index, 'hash', n) end
      redis.call('DEL', index)
    end
    return nil, nil, 0
  end
  local complete, m = index_sync(c, which, llen, id)
  if type(complete) == 'table' then return complete end
  local at, head, covered
  if m then
    at, head, covered = m[5], m[4], m[1]
  else
    local r = redis.call('HMGET', index, id, '#head', '#len')
    at, head, covered = r[1], r[2], r[3]
  end
  local pos = at and tonumber(at) - tonumber(head or '0')
  if pos and pos >= 0 and pos < tonumber(covered or '0') then
    local el = redis.call('LINDEX', list, pos)
    if el and json.id_of(el, idkey) == id then return pos, el, llen end
    if complete then
      -- a complete, valid index pointing at another element: another
      -- writer's update landed on a shifted position; made again
      redis.call('UNLINK', index)
      return needs_build(which)
    end
  end
  if complete then return nil, nil, llen, m end
  return needs_build(which)
end

-- locate_new looks id up for an append to list which, in two reads when
-- the index covers the list (the usual case): the index's '#len', '#last',
-- '#head' and id, and the list's last element. The index covers the list
-- while that element's fingerprint is '#last': another writer's append
-- changes it (a Q&A entry's fingerprint holds its time, so no other entry
-- has it), and a rewrite (Cognee's delete) that keeps it shortens the
-- list, which appended finds in RPUSH's answer (the index, a superset of
-- the ids, still tells that id is not held). A context entry's
-- fingerprint is its bytes, which a rewrite may put back at the end: its
-- list's first element is read too ('#first'). With exact (an update in
-- place, or a read, which no RPUSH answers either), the list's length as
-- well (LLEN), as for a repeat. Anything else takes locate's way.
-- Returns a table: answer (a refusal, or needs_build: return it), dup
-- (the element holding id, at pos: a repeat; a read or an update in place
-- may use it, not a removal, which needs the list's length), else llen (the list's length),
-- last_fp (its last element's fingerprint), head and fresh (no index, an
-- empty list).
local function locate_new(c, which, id, exact)
  local list, index, idkey = index_keys(c, which)
  local m
  if which == 'qa' then
    m = redis.pcall('HMGET', index, '#len', '#last', '#head', id)
  else
    m = redis.pcall('HMGET', index, '#len', '#last', '#head', id, '#first')
  end
  if m.err then return { answer = guard.from_error(index, 'hash', m) } end
  local last = redis.pcall('LINDEX', list, -1)
  if type(last) == 'table' then return { answer = guard.from_error(list, 'list', last) } end
  local covered, head = tonumber(m[1] or ''), tonumber(m[3] or '0')
  if not m[1] and not m[4] and not last then return { llen = 0, head = 0, last_fp = '', fresh = true } end
  -- a context entry's fingerprint is its bytes, which another writer's
  -- rewrite may put back at the end: its first element is checked too
  local first_ok = which == 'qa' or (covered and fingerprint(which, redis.call('LINDEX', list, 0)) == m[5])
  -- exact (an update in place, which keeps the index as it is): the
  -- list's length too, which no RPUSH answers then
  local n_list -- LLEN, read once when needed
  local function list_len()
    n_list = n_list or redis.call('LLEN', list)
    return n_list
  end
  if exact and covered and list_len() ~= covered then first_ok = false end
  if covered and head and last and first_ok and fingerprint(which, last) == m[2] then
    if not m[4] then return { llen = covered, head = head, last_fp = m[2] } end
    local pos = (tonumber(m[4]) or -1) - head
    -- a repeat writes nothing, so no RPUSH tells whether a rewrite that
    -- kept the last element shortened the list: its length does (else
    -- locate's way, which makes the index anew)
    if pos >= 0 and pos < covered and list_len() == covered then
      local el = redis.call('LINDEX', list, pos)
      if el and json.id_of(el, idkey) == id then return { dup = el, pos = pos } end
    end
  end
  local pos, el, llen, meta = locate(c, which, id)
  if type(pos) == 'table' then return { answer = pos } end
  if pos then return { dup = el, pos = pos } end
  if llen == 0 then return { llen = 0, head = 0, last_fp = '', fresh = true } end
  meta = meta or redis.call('HMGET', index, '#len', '#last', '#first', '#head')
  return { llen = llen, head = tonumber(meta[4] or '0'), last_fp = meta[2] or '' }
end

-- appended records in index which that element el with id id was just
-- pushed as the list's element newlen (1-based), after locate_new found
-- the index covering the list (found). When the list had shrunk beneath an
-- unchanged last element (another writer's rewrite), the index's positions
-- no longer hold: it goes, and is made again a step at a time.
local function appended(c, which, id, el, newlen, found)
  local _, index = index_keys(c, which)
  if newlen ~= found.llen + 1 then
    redis.call('UNLINK', index)
    return
  end
  local fp = fingerprint(which, el)
  local args = { id, string.format('%d', found.head + newlen - 1), '#len', tostring(newlen), '#last', fp }
  if newlen == 1 then
    args[#args + 1], args[#args + 2] = '#first', fp
    args[#args + 1], args[#args + 2] = '#head', '0'
    session.made(c, index_prefix(which))
  end
  redis.call('HSET', index, unpack(args))
end

-- index_append records that the element el with id id was just pushed as
-- the list's element newlen (1-based), after locate found the index
-- complete (or the list empty: then the index is made anew). head is the
-- index's '#head' when the caller has it.
local function index_append(c, which, id, el, newlen, head)
  local _, index = index_keys(c, which)
  if newlen == 1 then
    head = 0
    redis.call('DEL', index)
  elseif not head then
    head = tonumber(redis.call('HGET', index, '#head') or '0')
  end
  local fp = fingerprint(which, el)
  local args = { id, string.format('%d', head + newlen - 1), '#len', tostring(newlen), '#last', fp }
  if newlen == 1 then
    args[#args + 1], args[#args + 2] = '#first', fp
    args[#args + 1], args[#args + 2] = '#head', '0'
  end
  redis.call('HSET', index, unpack(args))
end

-- index_touch keeps the fingerprints current after the element at pos of
-- list which was replaced by el (LSET); llen is the list's length.
local function index_touch(c, which, pos, el, llen)
  local _, index = index_keys(c, which)
  local covered = tonumber(redis.call('HGET', index, '#len') or '')
  if not covered then return end
  if pos == 0 then redis.call('HSET', index, '#first', fingerprint(which, el)) end
  if pos == covered - 1 then redis.call('HSET', index, '#last', fingerprint(which, el)) end
end

return {
  ENTRIES = ENTRIES,
  TRACES = TRACES,
  CONTEXT = CONTEXT,
  QA_INDEX = QA_INDEX,
  CTX_INDEX = CTX_INDEX,
  open = open,
  lists = lists,
  index_prefix = index_prefix,
  locate_new = locate_new,
  appended = appended,
  INDEX_STEP = INDEX_STEP,
  index_keys = index_keys,
  fingerprint = fingerprint,
  read_range = read_range,
  index_put = index_put,
  hset_chunks = hset_chunks,
  index_sync = index_sync,
  needs_build = needs_build,
  locate = locate,
  append = index_append,
  touch = index_touch,
}
