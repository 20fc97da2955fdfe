-- messages_delete: delete a message that has no children, or with
-- ARGV[3] '1' the message and its whole subtree (O(subtree), at most
-- SESSION_MAX_MESSAGES). When the latest leaf goes, the deleted message's
-- parent becomes the latest leaf (else the newest message left).
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the message's id
-- ARGV[3] '1' for the subtree, else '0'
-- The messages leave the search index; compactions with an end among them
-- go. Emits message_deleted {id, ids[, subtree: true]}.
-- returns (reply.lua) {'ok', number of messages deleted}; with nothing
--   written, {'missing'} (no such message), {'refused', 'has_children',
--   ...} and {'refused', 'key_wrong_type', ...}.
--- @include reply
--- @include session
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local id, whole = ARGV[2], ARGV[3] == '1'
local refused = msgtree.begin(c)
if refused then return refused end
if not session.has(c, msgtree.MTREE) then return reply.missing() end
local n = msgtree.node(c, id)
if not n then return reply.missing() end
if not whole and msgtree.has_children(c, id) then return messages.has_children(id) end
local gone = { n }
if whole then gone = msgtree.subtree(c, n, c.count) end
local leaf = msgtree.rec_msgs(c)
local leaf_gone, ids = false, {}
for _, d in ipairs(gone) do
  if d.id == leaf then leaf_gone = true end
  ids[d.id] = true
end
local comps = messages.compactions(c)
refused = messages.change(c)
if refused then return refused end

local docs = {}
for _, d in ipairs(gone) do
  msgtree.remove_node(c, d)
  docs[#docs + 1] = d.id
end
-- their postings now; a subtree's holding too many to take out in one
-- script drops the session's messages from the index, for the catch-up
-- to take the rest in again
if c.sdocs then search.retire(c, c.sdocs, docs) end
for _, cp in ipairs(comps) do
  if ids[cp.from] or ids[cp.to] then redis.call('HDEL', c.mcomp, cp.id, '#' .. cp.id) end
end
local count = c.count - #gone
local fields = { 'message_count', msgtree.fmt_int(count) }
if leaf_gone then
  local new = n.parent ~= '' and n.parent or msgtree.newest(c)
  fields = msgtree.leaf_fields(c, new, count)
end
msgtree.emptied(c, count)
local gone_ids = {}
for i, d in ipairs(gone) do gone_ids[i] = d.id end
messages.emit_deleted(c, id, gone_ids, whole and ',"subtree":true' or nil)
session.finish(c, fields)
return session.reply(c, reply.ok(#gone))
