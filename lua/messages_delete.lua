--! prelude: messages_lib
-- messages_delete: delete a message that has no children, or with
-- ARGV[6] = '1' it and every descendant (O(subtree): at most the session's
-- messages, SESSION_MAX_MESSAGES). When the latest leaf goes, the deleted
-- message's parent becomes the latest leaf (else the newest message left).
-- A compaction with an endpoint deleted is deleted too.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the message id
-- ARGV[6] '1': the subtree too; '0': refuse a message with children
-- returns {1, number of messages deleted}; with nothing written,
--   {-1, code, id}: 'not_found', 'has_children', 'wrong_type'.
local id, whole = ARGV[5], ARGV[6] == '1'
local refused = write_checks()
if refused then return refused end
local n = node(id)
if not n then return { -1, 'not_found', id } end
if not whole and has_children(id) then return { -1, 'has_children', id } end
local gone = { n }
if whole then gone = subtree(n, redis.call('ZCARD', K_MORDER)) end

local leaf = rec_msgs()
local leaf_gone, ids = false, {}
for _, d in ipairs(gone) do
  if d.id == leaf then leaf_gone = true end
  ids[d.id] = true
end
local comps = compactions()
for _, d in ipairs(gone) do
  remove_node(d)
  unindex_doc(K_SDOCS, 'message', d.id)
end
for _, c in ipairs(comps) do
  if ids[c.from] or ids[c.to] then redis.call('HDEL', K_MCOMP, c.id, '#' .. c.id) end
end
if leaf_gone then
  if n.parent ~= '' then set_leaf(n.parent) else set_leaf(nil) end
else
  set_leaf(leaf)
end
local gone_ids = {}
for i, d in ipairs(gone) do gone_ids[i] = d.id end
emit_deleted(id, gone_ids, whole and ',"subtree":true' or nil)
finish_write(false, false)
return { 1, #gone }
