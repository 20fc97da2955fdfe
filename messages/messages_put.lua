-- messages_put: store a message by id. A new id is an append (the parent
-- rules of messages_append); an id the session holds keeps its place in
-- the tree (parent, created_at) and gets the new fields; a change of its
-- tokens moves the path tokens of its descendants (O(subtree)). PATCH sends
-- the stored message it read (ARGV[6]) and is refused when it changed since.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] id, ARGV[3] fingerprint, ARGV[4] tokens, ARGV[5] body (the
--   message's JSON object without parent_id and created_at)
-- ARGV[6] '' or the stored message the new one was made from (PATCH)
-- ARGV[7] 'put' (create or replace) or 'patch' (replace only)
-- ARGV[8] the parent for a new message: 'latest', 'root' or 'id'
--   (ARGV[9]); for a held one, 'root' or 'id' must name its parent
-- ARGV[10] SESSION_MAX_MESSAGES
-- ARGV[11..12] for the search index: terms ("term tf ...", '' = none),
--   length
-- ARGV[13] SESSION_COMPACT_AFTER_TOKENS (0 = never): compaction_suggested
--   is emitted when the write takes the latest path past it
-- returns (reply.lua) {'ok', 'stored', message} created ('started' when
--   this started the session), {'ok', 'replaced', message} replaced (each
--   followed by 'index_pending' when the write dropped the session's
--   index as foreign: search.current); with
--   nothing written, the answers of messages_append, {'missing'} (patch:
--   no such message), {'ok', 'changed', id} (patch: the message changed
--   since it was read) and {'refused', 'id_conflict', text} (root or id
--   names another parent than the held message's).
--- @include reply
--- @include json
--- @include clock
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local id, fp, tokens, body, expect, mode = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local pmode, pid = ARGV[8], ARGV[9]
local refused = msgtree.begin(c)
if refused then return refused end
local n = session.has(c, msgtree.MTREE) and msgtree.node(c, id)
if not n then
  if mode == 'patch' then return reply.missing() end
  return session.reply(c, messages.append(c, { { id = id, fp = fp, tokens = tokens, body = body, spec = ARGV[11],
    len = tonumber(ARGV[12]) } }, pmode, pid, nil, tonumber(ARGV[10]), '', tonumber(ARGV[13])))
end
local spec = search.wanted(c, ARGV[11]) or '' -- none: its old document (if any) leaves the index
local old = redis.call('HGET', c.msgs, id)
if expect ~= '' and old ~= expect then return session.reply(c, reply.ok('changed', id)) end
if (pmode == 'root' and n.parent ~= '') or (pmode == 'id' and n.parent ~= pid) then
  return messages.id_conflict(id)
end
local suggest = tonumber(ARGV[13]) or 0
local latest = msgtree.node(c, msgtree.rec_msgs(c))
local before = 0
if suggest > 0 then before = messages.path_tokens(c, latest) end
-- a document to write (or an old one to take out) needs the index's keys
local indexing = spec ~= '' or session.has(c, search.DOCS)
if indexing then
  refused = search.prepare(c, 'messages')
  if refused then return refused end
end
refused = messages.change(c)
if refused then return refused end
local created_at = (old and json.field_raw(old, 'created_at')) or ('"' .. clock.iso_time(session.now(c)) .. '"')

local text = messages.stored_json(body, n.parent, created_at)
local delta = tokens - n.tokens
n.tokens, n.cum, n.fp = tokens, n.cum + delta, fp
redis.call('HSET', c.msgs, id, text)
redis.call('HSET', c.mtree, id, msgtree.node_text(n))
if delta ~= 0 then msgtree.add_tokens(c, n, delta) end
if indexing then search.index_doc(c, c.sdocs, id, spec, ARGV[12], session.now(c)) end
events.emit(c, 'message_updated', 'message', id, text)
if suggest > 0 then messages.suggest_crossed(c, suggest, before, messages.path_tokens(c, latest)) end
session.finish(c)
-- the session's index dropped as foreign (search.current): the catch-up
-- takes its other messages in again
if c.search_dropped then return session.reply(c, reply.ok('replaced', text, 'index_pending')) end
return session.reply(c, reply.ok('replaced', text))
