-- messages_pop: remove the latest leaf and answer it; its parent becomes
-- the latest leaf (a new root's pop leaves the newest message left); a
-- compaction ending there is deleted. One
-- script, so two concurrent pops never answer the same message.
-- KEYS[1..15] the session's keys, indexes and totals (lib/session.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (lib/session.lua)
-- returns (reply.lua) {'ok', message}; with nothing written, {'missing'}
--   (no messages), {'refused', code, text} for 'has_children' (the latest
--   leaf has children: another branch was appended under it) and
--   'key_wrong_type'.
--- @include reply
--- @include session
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local refused = messages.write_checks(c)
if refused then return refused end
local leaf = msgtree.rec_msgs(c)
local n = msgtree.node(c, leaf)
if not n then return reply.missing() end
if msgtree.has_children(c, n.id) then return messages.has_children(n.id) end
local text = redis.call('HGET', c.msgs, n.id)
messages.drop_compactions(c, { [n.id] = true })
msgtree.remove_node(c, n)
search.unindex_doc(c, c.sdocs, n.id)
if n.parent ~= '' then msgtree.set_leaf(c, n.parent) else msgtree.set_leaf(c, nil) end
messages.emit_deleted(c, n.id, { n.id }, ',"popped":true')
session.finish_write(c, false, false)
return reply.ok(text)
