-- messages_pop: remove the latest leaf and answer it; its parent becomes
-- the latest leaf (a new root's pop leaves the newest message left); a
-- compaction ending there is deleted. One script, so two concurrent pops
-- never answer the same message.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- Emits message_deleted {id, ids, popped: true}.
-- returns (reply.lua) {'ok', message}; with nothing written, {'missing'}
--   (no message), {'refused', 'has_children', ...} (the latest leaf has
--   children: another branch grew under it) and {'refused',
--   'key_wrong_type', ...}.
--- @include reply
--- @include session
--- @include search
--- @include msgtree
--- @include messages

local c = msgtree.open(session.open(KEYS, ARGV))
local refused = msgtree.begin(c)
if refused then return refused end
local leaf = msgtree.rec_msgs(c)
if not leaf or not session.has(c, msgtree.MTREE) then return reply.missing() end
local n = msgtree.node(c, leaf)
if not n then return reply.missing() end
if msgtree.has_children(c, n.id) then return messages.has_children(n.id) end
local text = redis.call('HGET', c.msgs, n.id)
refused = messages.change(c)
if refused then return refused end
messages.drop_compactions(c, { [n.id] = true })
msgtree.remove_node(c, n)
if c.sdocs then search.unindex_doc(c, c.sdocs, n.id) end
local count = c.count - 1
local fields = msgtree.leaf_fields(c, n.parent ~= '' and n.parent or msgtree.newest(c), count)
msgtree.emptied(c, count)
messages.emit_deleted(c, n.id, { n.id }, ',"popped":true')
session.finish(c, fields)
return session.reply(c, reply.ok(text))
