-- blocks_set: append to, or replace the content of, an existing block:
-- POST .../blocks/{label}/append and the set_context tool. Checks the
-- block's max_tokens (and, for a tool, that it is writable) before
-- writing; the counts and tokens of the new content follow from the
-- stored counts and the piece's (lib: blocks.lua). It writes the session
-- when the block is the session's or the call is a tool call with an id
-- (the session's ring of tool call ids); a user's block alone writes no
-- session.
-- KEYS[1] the session's record (lib/session.lua); "-" for a user path
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] 'session': the session's block, else the user's; 'user': the
--   user's only
-- ARGV[3] the label (lower-case)
-- ARGV[4] 'append' or 'replace'
-- ARGV[5] the piece: a JSON string
-- ARGV[6] the piece's counts ("<bytes>,<chars>,<words>,<lead>,<trail>")
-- ARGV[7] '1' for a tool call (a read-only block is refused, and what
--   the call could not do is its outcome, not a refusal), else '0'
-- ARGV[8] the tool call's id ('' for none): a repeat answers the first
--   outcome and writes nothing
-- ARGV[9] the largest content in bytes
-- emits block_changed on the stream of the block's scope when written.
-- returns (reply.lua) {'ok', 'written', block, scope, started, outcome}
--   written (started: 1 when this started the session, else 0; outcome:
--   "<label>\t<action>\t<scope>\t<tokens>\t<max_tokens or ''>");
--   {'dup', outcome} a repeated tool call id; {'missing'} no such block.
--   A write the block does not take answers, for a tool call, {'ok',
--   code, ...} (the call's outcome, a 200 for the model), else
--   {'refused', code, text} (409), code the API's: block_full (tool call:
--   tokens, max) past max_tokens; block_readonly a read-only block (tool
--   calls only); block_too_large (tool call: bytes, max) past ARGV[9]
--   bytes; stored_value_invalid the stored block is not one the sidecar
--   wrote. {'refused', 'key_wrong_type', text} when a key it reads or
--   writes holds another type, or the record is not what the core keeps
--   (session.begin); {'refused', ...} when the user is fenced. Nothing is
--   written but for 'written'.
--- @include reply
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local refused = session.begin(c)
if refused then return refused end
local mode, label, action, piece = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local tool_id, tool = ARGV[8], ARGV[7] == '1'

-- cannot is the answer when the content cannot be written: for a tool
-- call an outcome ({'ok', code, ...} values), else the refusal (text).
local function cannot(code, text, ...)
  if tool then return session.reply(c, reply.ok(code, ...)) end
  return reply.refused(code, text)
end

if tool_id ~= '' then
  local seen
  seen, refused = blocks.tool_call_seen(c, tool_id)
  if refused then return refused end
  if seen then return session.reply(c, reply.dup(seen)) end
end
local key, old, scope = blocks.find(c, mode, label)
if not key then
  refused = old -- find's second answer when not found: a refusal, or nil
  return refused or reply.missing()
end
local f = blocks.fields(old)
if not f or (action == 'append' and not blocks.one_string(f.content)) then
  return cannot('stored_value_invalid', 'block "' .. label
    .. '" holds a value the sidecar did not write (another program wrote it); nothing was changed')
end
if tool and not f.writable then
  return cannot('block_readonly', 'block "' .. label .. '" is read-only; nothing was written')
end
local counts = blocks.parse_counts(ARGV[6])
local content = piece
if action == 'append' then
  counts = blocks.counts_append(f.counts, counts)
  content = string.sub(f.content, 1, -2) .. string.sub(piece, 2)
end
local tokens = blocks.counts_tokens(counts)
if f.max and tokens > f.max then
  return cannot('block_full', string.format('block "%s": the content would be %d tokens, over its max_tokens %d; nothing was written',
    label, tokens, f.max), tokens, f.max)
end
local most = tonumber(ARGV[9])
if counts.bytes > most then
  return cannot('block_too_large', string.format(
    'block "%s": the content would be %d bytes, over BLOCKS_MAX_CONTENT_BYTES %d; nothing was written', label, counts.bytes,
    most), counts.bytes, most)
end

-- the session families it writes: the block's hash, the ring
local fams = {}
if scope == 'session' then fams[#fams + 1] = { blocks.BLOCKS, true } end
if tool_id ~= '' then fams[#fams + 1] = { blocks.TOOL_CALLS, true } end
refused = blocks.commit(c, #fams > 0 and fams or nil, scope)
if refused then return refused end
local block = blocks.with(old, f, content, { { 'tokens', string.format('%d', tokens) },
  { 'counts', '"' .. blocks.format_counts(counts) .. '"' }, { 'updated_at', string.format('%d', session.now(c)) } })
local outcome = table.concat({ label, action, scope, string.format('%d', tokens), f.max and string.format('%d', f.max) or '' }, '\t')
redis.call('HSET', key, label, block)
if tool_id ~= '' then blocks.tool_call_remember(c, tool_id, outcome) end
blocks.changed(c, scope, label, block)
local started = blocks.finish(c)
return session.reply(c, reply.ok('written', block, scope, started and 1 or 0, outcome))
