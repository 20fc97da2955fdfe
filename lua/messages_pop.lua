--! prelude: messages_lib
-- messages_pop: remove the latest leaf and answer it; its parent becomes
-- the latest leaf (a new root's pop leaves the newest message left); a
-- compaction ending there is deleted. One
-- script, so two concurrent pops never answer the same message.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- returns {1, message}; with nothing written, {-1, code, id}: 'not_found'
--   (no messages), 'has_children' (the latest leaf has children: another
--   branch was appended under it), 'wrong_type'.
local refused = write_checks()
if refused then return refused end
local leaf = rec_msgs()
local n = node(leaf)
if not n then return { -1, 'not_found', '' } end
if has_children(n.id) then return { -1, 'has_children', n.id } end
local json = redis.call('HGET', K_MSGS, n.id)
drop_compactions({ [n.id] = true })
remove_node(n)
unindex_doc(K_SDOCS, 'message', n.id)
if n.parent ~= '' then set_leaf(n.parent) else set_leaf(nil) end
emit_deleted(n.id, { n.id }, ',"popped":true')
finish_write(false, false)
return { 1, json }
