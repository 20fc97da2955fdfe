-- messages_delete: delete a message that has no children, or with
-- ARGV[6] = '1' it and every descendant (O(subtree): at most the session's
-- messages, SESSION_MAX_MESSAGES). When the latest leaf goes, the deleted
-- message's parent becomes the latest leaf (else the newest message left).
-- A compaction with an endpoint deleted is deleted too.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- ARGV[5] the message id
-- ARGV[6] '1': the subtree too; '0': refuse a message with children
-- returns (reply.lua) {'ok', number of messages deleted}; with nothing
--   written, {'missing'} (no message ARGV[5]), {'refused', code, text} for
--   'has_children' and 'key_wrong_type'.
--- @include reply
--- @include session
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local id, whole = ARGV[5], ARGV[6] == '1'
local refused = messages.write_checks(c)
if refused then return refused end
local n = msgtree.node(c, id)
if not n then return reply.missing() end
if not whole and msgtree.has_children(c, id) then return messages.has_children(id) end
local gone = { n }
if whole then gone = msgtree.subtree(c, n, redis.call('ZCARD', c.morder)) end

local leaf = msgtree.rec_msgs(c)
local leaf_gone, ids = false, {}
for _, d in ipairs(gone) do
  if d.id == leaf then leaf_gone = true end
  ids[d.id] = true
end
local comps = messages.compactions(c)
local docs = {}
for _, d in ipairs(gone) do
  msgtree.remove_node(c, d)
  docs[#docs + 1] = d.id
end
-- their postings now; a subtree's holding too many to take out in one
-- script drops the session's messages from the index, for the catch-up
-- to take the rest in again
search.retire(c, c.sdocs, docs)
for _, cp in ipairs(comps) do
  if ids[cp.from] or ids[cp.to] then redis.call('HDEL', c.mcomp, cp.id, '#' .. cp.id) end
end
if leaf_gone then
  if n.parent ~= '' then msgtree.set_leaf(c, n.parent) else msgtree.set_leaf(c, nil) end
else
  msgtree.set_leaf(c, leaf)
end
local gone_ids = {}
for i, d in ipairs(gone) do gone_ids[i] = d.id end
messages.emit_deleted(c, id, gone_ids, whole and ',"subtree":true' or nil)
session.finish_write(c, false, false)
return reply.ok(#gone)
