-- blocks_set: append to, or replace the content of, an existing block:
-- POST .../blocks/{label}/append and the set_context tool. Checks the
-- block's max_tokens (and, for a tool, that it is writable) before
-- writing; the counts and tokens of the new content follow from the
-- stored counts and the piece's (lib/blocks.lua).
-- KEYS[1..15] the session's keys, indexes and totals (session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session.lua)
-- ARGV[5] 'session': the session's block, else the user's; 'user': the
--   user's only
-- ARGV[6] the label (lower-case)
-- ARGV[7] 'append' or 'replace'
-- ARGV[8] the piece: a JSON string
-- ARGV[9] the piece's counts ("<bytes>,<chars>,<words>,<lead>,<trail>")
-- ARGV[10] '1' for a tool call (a read-only block is refused, and what
--   the call could not do is its outcome, not a refusal), else '0'
-- ARGV[11] the tool call's id ('' for none): a repeat answers the first
--   outcome and writes nothing
-- ARGV[12] the largest content in bytes
-- emits block_changed on the stream of the block's scope when written.
-- returns {'ok', 'written', block, scope, started, outcome} written
--   (started: 1 when this started the session, else 0; outcome:
--   "<label>\t<action>\t<scope>\t<tokens>\t<max_tokens or ''>");
--   {'dup', outcome} a repeated tool call id; {'missing'} no such block.
--   A write the block does not take answers, for a tool call, {'ok',
--   code, ...} (the call's outcome, a 200 for the model), else
--   {'refused', code, text} (409), code the API's: block_full (tool call:
--   tokens, max) past max_tokens; block_readonly a read-only block (tool
--   calls only); block_too_large (tool call: bytes, max) past ARGV[12]
--   bytes; stored_value_invalid the stored block is not one the sidecar
--   wrote. {'refused', 'key_wrong_type', text} when
--   a key it would write holds another type (session.guard) or a record
--   field finish_write reads is not what the scripts keep
--   (session_refused). Nothing is written but for 'written'.
--- @include reply
--- @include clock
--- @include session
--- @include blocks

local c = blocks.open(session.open(KEYS, ARGV))
local mode, label, action, piece = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local tool_id, tool = ARGV[11], ARGV[10] == '1'

-- cannot is the answer when the content cannot be written: for a tool
-- call an outcome ({'ok', code, ...} values), else the refusal (text).
local function cannot(code, text, ...)
  if tool then return reply.ok(code, ...) end
  return reply.refused(code, text)
end

local refused = session.guard(c, 'keep', { c.blocks, 'hash' }, { c.ublocks, 'hash' }, { c.tool_calls, 'hash' },
  { c.user_events, 'stream' })
if refused then return refused end
if tool_id ~= '' then
  local seen = blocks.tool_call_seen(c, tool_id)
  if seen then return reply.dup(seen) end
end
local key, old, scope = blocks.find(c, mode, label)
if not key then return reply.missing() end
local f = blocks.fields(old)
if not f or (action == 'append' and not blocks.one_string(f.content)) then
  return cannot('stored_value_invalid', 'block "' .. label
    .. '" holds a value the sidecar did not write (another program wrote it); nothing was changed')
end
if key == c.blocks or tool_id ~= '' then
  refused = blocks.session_refused(c)
  if refused then return refused end
end
if tool and not f.writable then
  return cannot('block_readonly', 'block "' .. label .. '" is read-only; nothing was written')
end
local counts = blocks.parse_counts(ARGV[9])
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
local most = tonumber(ARGV[12])
if counts.bytes > most then
  return cannot('block_too_large', string.format(
    'block "%s": the content would be %d bytes, over BLOCKS_MAX_CONTENT_BYTES %d; nothing was written', label, counts.bytes,
    most), counts.bytes, most)
end
local block = blocks.with(old, f, content, { { 'tokens', string.format('%d', tokens) },
  { 'counts', '"' .. blocks.format_counts(counts) .. '"' }, { 'updated_at', string.format('%d', clock.now_us()) } })
local outcome = table.concat({ label, action, scope, string.format('%d', tokens), f.max and string.format('%d', f.max) or '' }, '\t')
local new_key = tool_id ~= '' and redis.call('EXISTS', c.tool_calls) == 0
redis.call('HSET', key, label, block)
if tool_id ~= '' then blocks.tool_call_remember(c, tool_id, outcome) end
local started = false
if key == c.blocks or tool_id ~= '' then
  local _, st = session.finish_write(c, false, new_key)
  started = st
end
blocks.slide_user(c)
blocks.changed(c, scope, label, block)
return reply.ok('written', block, scope, started and 1 or 0, outcome)
