-- blocks: helpers of the context-block scripts (blocks_*.lua), session
-- scripts on the core's per-call contract (lua/lib/session.lua), which
-- open their call's context with blocks.open(session.open(KEYS, ARGV)).
--
-- A block is a JSON object the sidecar builds:
--   {"label", "description", "content", "max_tokens", "writable",
--    "position", "tokens", "counts", "created_at", "updated_at"}
-- the value of field <label> of the session's blocks hash (c.blocks, a
-- session family) or of the user's (c.ublocks). "counts" is
-- "<bytes>,<code points>,<words>,<lead>,<trail>" of the content (Go's
-- tokens.Counts): an append combines the stored counts with the piece's as
-- Counts.Append does and estimates as Counts.Tokens, so no script counts a
-- text. Edits splice fields in place (json.set_fields): every other byte
-- stays as the sidecar wrote it. created_at and updated_at are Redis TIME
-- in µs.
--
-- The user's blocks, agent_user_blocks:<tag><u>, live in the user's slot
-- and expire SESSION_TTL_SECONDS after the user's last block write (every
-- write of this module slides them: finish), not with the user's sessions.
--
-- A write (blocks_put, blocks_set, blocks_delete, blocks_freeze) reads the
-- keys it writes first, each with blocks.read (a pcall: a key of another
-- type is refused by name before anything is written), then calls
-- blocks.commit (the remaining checks, and session.commit when it writes
-- the session), writes, and ends with blocks.finish. A write of a user's
-- block alone (no tool call on a session path) writes no session: it opens
-- no record (session.finish_user).
--
-- Events: each block write emits one block_changed (block_changed below): a
-- session block's on the session's stream, a user block's on the user's
-- stream only (no copy into each of the user's sessions).
--- @include reply
--- @include json
--- @include clock
--- @include guard
--- @include ring
--- @include session
--- @include events

-- MAX_TOOL_CALLS is how many tool_call_ids a session remembers (the newest).
local MAX_TOOL_CALLS = 1000

-- The module's session families (blocks/keys.go) and its user family.
local BLOCKS = 'agent_session_blocks'
local PROMPT = 'agent_session_prompt'
local TOOL_CALLS = 'agent_session_tool_calls'
local USER_BLOCKS = 'agent_user_blocks'

-- open adds the blocks module's keys (blocks/keys.go) to session context c
-- and returns c:
--   c.blocks      agent_session_blocks:<tag><u>:<s>      hash label -> block
--   c.prompt      agent_session_prompt:<tag><u>:<s>      hash: frozen prompt
--   c.tool_calls  agent_session_tool_calls:<tag><u>:<s>  hash: tool call ring
--   c.ublocks     agent_user_blocks:<tag><u>             hash label -> block
local function open(c)
  c.blocks = session.key(c, BLOCKS)
  c.prompt = session.key(c, PROMPT)
  c.tool_calls = session.key(c, TOOL_CALLS)
  c.ublocks = session.user_key(c, USER_BLOCKS)
  c.read = {}
  return c
end

-- read runs read command cmd on key k (every key of the module is a hash)
-- as a pcall: its answer, or nil and the refusal of a key of another type
-- (guard.from_error; any other error as Redis gave it). A key read so is
-- of the right type (c.read[k]) for the rest of the call.
local function read(c, cmd, k, ...)
  local r = redis.pcall(cmd, k, ...)
  if type(r) == 'table' and r.err then return nil, guard.from_error(k, 'hash', r) end
  c.read[k] = true
  return r
end

-- commit makes the checks a block write makes after its reads, and, when
-- it writes the session, its first write:
--   fams    the session families it writes ({prefix, read} pairs, read
--           true when blocks.read read the key first; session.use), nil
--           for a write of a user's block alone (no session written)
--   event   whose stream gets the write's block_changed: 'session'
--           (events.use), 'user' (the user's stream's type checked), or
--           nil for none
-- The user's blocks, which finish slides, are checked unless read. Returns
-- the refusal (nothing written), or nil.
local function commit(c, fams, event)
  local refused
  if event == 'user' then refused = events.user_refused(c) end
  if not refused and not c.read[c.ublocks] then refused = guard.check({ { c.ublocks, 'hash' } }) end
  if refused then return refused end
  if not fams then return nil end
  for _, f in ipairs(fams) do session.use(c, f[1], 'hash', f[2]) end
  if event == 'session' then events.use(c) end
  c.writes_session = true
  return session.commit(c)
end

-- finish ends a block write: the session's record and TTLs when it wrote
-- the session (session.finish), and the user's blocks' TTL:
-- SESSION_TTL_SECONDS more (0: no expiry). Returns whether this write
-- started the session.
local function finish(c)
  if c.default_ttl > 0 then
    redis.call('EXPIRE', c.ublocks, c.default_ttl)
  else
    redis.call('PERSIST', c.ublocks)
  end
  if c.writes_session then return session.finish(c) end
  session.finish_user(c)
  return false
end

local function parse_counts(s)
  local b, n, w, l, t = string.match(s or '', '^(%d+),(%d+),(%d+),([01]),([01])$')
  if not b then return nil end
  return { bytes = tonumber(b), chars = tonumber(n), words = tonumber(w), lead = l == '1', trail = t == '1' }
end

local function format_counts(n)
  return string.format('%d,%d,%d,%d,%d', n.bytes, n.chars, n.words, n.lead and 1 or 0, n.trail and 1 or 0)
end

-- counts_append is tokens.Counts.Append: the counts of a .. b.
local function counts_append(a, b)
  if a.chars == 0 then return b end
  if b.chars == 0 then return a end
  local out = { bytes = a.bytes + b.bytes, chars = a.chars + b.chars, words = a.words + b.words,
    lead = a.lead, trail = b.trail }
  if a.trail and b.lead then out.words = out.words - 1 end
  return out
end

-- counts_tokens is tokens.Counts.Tokens: ceil(max(chars / 4, words * 1.3)).
local function counts_tokens(n)
  return math.max(math.floor((n.chars + 3) / 4), math.floor((n.words * 13 + 9) / 10))
end

-- split_block cuts stored block b into head, content (the raw JSON
-- string of "content") and tail, so a script scans only the small fields,
-- never the content byte by byte: a block the sidecar wrote holds
-- "content":"..." followed by ,"max_tokens": (Go's field order), and
-- neither sequence can occur inside a JSON string (a quote there is
-- escaped). nil for another layout.
local function split_block(b)
  local at = string.find(b, '"content":"', 1, true)
  if not at then return nil end
  local vs = at + 10
  local ve = string.find(b, '","max_tokens":', vs, true)
  if not ve then return nil end
  return string.sub(b, 1, vs - 1), string.sub(b, vs, ve), string.sub(b, ve + 1)
end

-- fields reads the fields of stored block b the scripts need: the raw
-- content (a JSON string), counts, max_tokens (a number or nil), writable,
-- created_at (raw: digits, or nil), and small: b with its content replaced
-- by "" (with writes from it). Returns nil for a value that is not such a
-- block (another program wrote it).
local function fields(b)
  local head, content, tail = split_block(b)
  local small = b
  if head then small = head .. '""' .. tail end
  local ok, spans = pcall(json.object_fields, small)
  if not ok then return nil end
  local f = {}
  for _, x in ipairs(spans) do
    if f[x.key] == nil then f[x.key] = string.sub(small, x.vs, x.ve - 1) end
  end
  if head then f.content = content end
  if not f.content or string.byte(f.content, 1) ~= 34 or not f.counts then return nil end
  local counts = parse_counts(string.sub(f.counts, 2, -2))
  if not counts then return nil end
  -- created_at is kept by every write and turned into a time by its event
  -- (block_changed): anything but the integer the sidecar writes is refused
  -- here, before a write
  if f.created_at and not string.match(f.created_at, '^%d+$') then return nil end
  return { content = f.content, counts = counts, max = tonumber(f.max_tokens or ''),
    writable = f.writable ~= 'false', created_at = f.created_at, small = head and small }
end

-- one_string reports whether raw (fields' content: from a quote to a
-- quote) is one JSON string, its only unescaped quotes its two ends. A
-- block another program wrote may hold a bare quote in its content, which
-- split_block does not see; an append keeps the stored content, so it
-- checks. The scan jumps from quote or backslash to the next one.
local function one_string(raw)
  local i = 2
  while true do
    local j = string.find(raw, '["\\]', i)
    if not j then return false end
    if string.byte(raw, j) == 34 then return j == #raw end
    i = j + 2
  end
end

-- with is the block of fields f (fields) with content (a raw JSON string)
-- and the fields of updates ({key, raw JSON} pairs) set.
local function with(b, f, content, updates)
  if not f.small then
    updates[#updates + 1] = { 'content', content }
    return json.set_fields(b, updates)
  end
  local small = json.set_fields(f.small, updates)
  local at = string.find(small, '"content":""', 1, true)
  return string.sub(small, 1, at + 9) .. content .. string.sub(small, at + 12)
end

-- find returns the key, stored value and scope ('session' or 'user') of
-- block label: for mode 'session' the session's block, else the user's;
-- for mode 'user' the user's only. nil when there is none; nil and the
-- refusal when a key it reads holds another type (blocks.read).
local function find(c, mode, label)
  if mode == 'session' then
    local b, refused = read(c, 'HGET', c.blocks, label)
    if refused then return nil, refused end
    if b then return c.blocks, b, 'session' end
  end
  local b, refused = read(c, 'HGET', c.ublocks, label)
  if refused then return nil, refused end
  if b then return c.ublocks, b, 'user' end
  return nil
end

-- digest_of is the SHA1 of the fields and values of the user's blocks and
-- the session's (HGETALL replies), each hash in field order: a rendering
-- made from a read with this digest is current while the digest stays
-- the same.
local function digest_of(user_flat, session_flat)
  local parts = {}
  for i, flat in ipairs({ user_flat, session_flat }) do
    local kv = {}
    for j = 1, #flat, 2 do kv[#kv + 1] = { flat[j], flat[j + 1] } end
    table.sort(kv, function(a, b) return a[1] < b[1] end)
    parts[#parts + 1] = tostring(i)
    for _, p in ipairs(kv) do
      parts[#parts + 1] = p[1]
      parts[#parts + 1] = p[2]
    end
  end
  return redis.sha1hex(table.concat(parts, '\0'))
end

-- digest reads the user's blocks and the session's and returns their
-- digest; nil and the refusal when either holds another type
-- (blocks.read). The hashes hold at most the configured number of blocks
-- each (at most 128 of at most 256 KiB; blocks_read.lua), so the
-- HGETALLs are bounded.
local function digest(c)
  local session_flat, refused = read(c, 'HGETALL', c.blocks)
  if refused then return nil, refused end
  local user_flat
  user_flat, refused = read(c, 'HGETALL', c.ublocks)
  if refused then return nil, refused end
  return digest_of(user_flat, session_flat)
end

-- tool_call_seen returns the remembered outcome of tool_call_id id, or
-- nil (nil and the refusal for a ring of another type: blocks.read). The
-- session's ring (ring.lua, untagged: the outcome as it is) keeps the
-- MAX_TOOL_CALLS newest ids.
local function tool_call_seen(c, id)
  local seen, refused = read(c, 'HGET', c.tool_calls, id)
  return seen or nil, refused
end

-- tool_call_remember stores outcome for id in the session's ring, evicting
-- the oldest id past MAX_TOOL_CALLS; a ring made anew in a session that
-- had one (another program removed it) gets its TTL (session.made).
local function tool_call_remember(c, id, outcome)
  if ring.put(c.tool_calls, id, outcome, MAX_TOOL_CALLS) then session.made(c, TOOL_CALLS) end
end

-- changed emits the write's block_changed event for block label of scope
-- ('session' or 'user'): block is the stored block, nil when it was
-- deleted. The event's data is the block as clients read it (scope added,
-- times in RFC 3339, the internal counts left out); past the event size
-- events.emit sends {id, kind, truncated} anyway, so a big block is not
-- rebuilt.
local function changed(c, scope, label, block)
  local data
  if not block then
    data = '{"label":' .. cjson.encode(label) .. ',"scope":"' .. scope .. '","deleted":true}'
  elseif #block > 8192 then
    data = block
  else
    local out = { '"label":' .. cjson.encode(label), '"scope":"' .. scope .. '"' }
    for _, x in ipairs(json.object_fields(block)) do
      local raw = string.sub(block, x.vs, x.ve - 1)
      if x.key == 'created_at' or x.key == 'updated_at' then
        out[#out + 1] = '"' .. x.key .. '":' .. cjson.encode(clock.iso_time(tonumber(raw)))
      elseif x.key ~= 'counts' and x.key ~= 'label' then
        out[#out + 1] = '"' .. x.key .. '":' .. raw
      end
    end
    data = '{' .. table.concat(out, ',') .. '}'
  end
  if scope == 'session' then return events.emit(c, 'block_changed', 'block', label, data) end
  return events.emit_user(c, 'block_changed', 'block', label, data)
end

return {
  BLOCKS = BLOCKS,
  PROMPT = PROMPT,
  TOOL_CALLS = TOOL_CALLS,
  open = open,
  read = read,
  commit = commit,
  finish = finish,
  parse_counts = parse_counts,
  format_counts = format_counts,
  counts_append = counts_append,
  counts_tokens = counts_tokens,
  fields = fields,
  one_string = one_string,
  with = with,
  find = find,
  digest_of = digest_of,
  digest = digest,
  tool_call_seen = tool_call_seen,
  tool_call_remember = tool_call_remember,
  changed = changed,
}
