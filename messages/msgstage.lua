-- msgstage: a staged append in progress (messages_stage_open.lua), as the
-- record's msg_stage holds it, and what the messages' readers and writers
-- make of it: a write waits (staging), a reader does not see its messages
-- (visible); and what the stage's steps share.
--- @include reply
--- @include guard
--- @include clock
--- @include session

local function fmt_int(x) return string.format('%d', x) end

-- parse reads the record's msg_stage (a staged append in progress,
-- messages_stage_open.lua): "token \t until (ms) \t seq0 \t staged \t parent
-- \t last \t created_at (µs) \t user \t parts \t kind \t key"; nil for
-- none. kind 'a': an append, staged in the session's own keys; 'w': a
-- whole new history (replace_history), staged in keys of its own.
-- Its messages are written with the sequence numbers seq0 + 1 .. seq0 +
-- staged, after every message a reader may see, and stay unseen until
-- the commit makes the last of them the latest leaf.
local function parse(v)
  if not v or v == '' then return nil end
  local token, untl, seq0, n, parent, last, created, user, parts, kind, key = string.match(v,
    '^([^\t]*)\t(%d+)\t(%d+)\t(%d+)\t([^\t]*)\t([^\t]*)\t(%d+)\t([01])\t(%d+)\t([aw])\t(.*)$')
  if not token then return nil end
  return { token = token, until_ms = tonumber(untl), seq0 = tonumber(seq0), n = tonumber(n), parent = parent,
    last = last, created = created, user = user == '1', parts = tonumber(parts), whole = kind == 'w', key = key }
end

-- stage_text is stage st as the record's msg_stage holds it.
local function stage_text(st)
  return table.concat({ st.token, fmt_int(st.until_ms), fmt_int(st.seq0), fmt_int(st.n), st.parent, st.last,
    st.created, st.user and '1' or '0', fmt_int(st.parts), st.whole and 'w' or 'a', st.key }, '\t')
end

-- staging is the refusal of a write that meets another's staged append
-- st: 'staging' while its lease runs (the sidecar waits and tries again),
-- 'stage_abandoned' once it ran out (its writer died: the sidecar drops
-- its messages, messages_stage_open.lua 'drop', and tries again).
local function staging(c, st)
  local left = st.until_ms - math.floor(session.now(c) / 1000)
  if left > 0 then
    return reply.refused('staging', 'session ' .. c.uid .. '/' .. c.sid ..
      ' is taking a staged append for ' .. fmt_int(left) .. ' ms more')
  end
  return reply.refused('stage_abandoned', 'session ' .. c.uid .. '/' .. c.sid ..
    ' holds the staged messages of an append whose writer stopped')
end

-- read_stage notes, for a read that did not begin, a staged append in
-- progress as c.staged_after (one HGET of the record).
local function read_stage(c)
  local st = parse(redis.call('HGET', c.record, 'msg_stage') or nil)
  c.staged_after = st and st.seq0
end

-- visible reports whether node n is one a reader may see: none of a staged
-- append in progress (read_leaf or read_stage noted it), whose sequence
-- numbers come after every other message's.
local function visible(c, n)
  return n ~= nil and (not c.staged_after or n.seq <= c.staged_after)
end

-- The staged families of a whole new history (messages/keys.go), in the
-- order of the session's own: messages, tree, children, order.
local STAGED = { 'agent_session_msgs_staged', 'agent_session_msg_tree_staged', 'agent_session_msg_children_staged',
  'agent_session_msg_order_staged' }
local STAGED_KIND = { 'hash', 'hash', 'zset', 'zset' }

-- staged_keys are c's session's keys of STAGED.
local function staged_keys(c)
  local out = {}
  for i, p in ipairs(STAGED) do out[i] = session.key(c, p) end
  return out
end

-- to_staged points c's messages keys (msgtree.open) at the staged ones (a
-- whole new history's puts write there), with an empty cache of nodes.
local function to_staged(c)
  local k = staged_keys(c)
  c.msgs, c.mtree, c.mkids, c.morder, c.nodes = k[1], k[2], k[3], k[4], {}
end

-- MAX_LIFE_MS: a stage lives at most this long from its open, however
-- often its steps renew the lease (a writer sending parts slowly holds the
-- session's other writes no longer).
local MAX_LIFE_MS = 60000

-- lease renews stage st's lease to ms from now, within MAX_LIFE_MS of its
-- open.
local function lease(c, st, ms)
  st.until_ms = math.min(math.floor(session.now(c) / 1000) + ms, math.floor(tonumber(st.created) / 1000) + MAX_LIFE_MS)
end

-- expire_staged gives c's messages keys the time the record has left, so
-- that staged messages end with the session even when no commit comes.
local function expire_staged(c)
  local p, t = redis.call('PTTL', c.record), session.ttl(c)
  for _, k in ipairs({ c.msgs, c.mtree, c.mkids, c.morder }) do
    if p > 0 then redis.call('PEXPIRE', k, p) elseif t > 0 then redis.call('EXPIRE', k, t) end
  end
end

-- created_at is the created_at of stage st's messages, quoted as stored.
local function created_at(st)
  return '"' .. clock.iso_time(tonumber(st.created)) .. '"'
end

-- part_missing refuses part got of an operation whose stage awaits part
-- want.
local function part_missing(want, got)
  return reply.refused('part_missing', 'operation part ' .. fmt_int(got) .. ' came where part ' .. fmt_int(want) ..
    ' was due: send the parts in order from 0 (the operation stays staged until its last part)')
end

-- session_full refuses an append of n messages to c's session, past max.
local function session_full(c, n, max)
  return reply.refused('session_full', 'session ' .. c.uid .. '/' .. c.sid .. ' holds ' .. fmt_int(c.count) ..
    ' messages and may hold at most ' .. fmt_int(max) .. ' (SESSION_MAX_MESSAGES); this append brings ' ..
    fmt_int(n) .. '; nothing was written')
end

return {
  STAGED = STAGED,
  STAGED_KIND = STAGED_KIND,
  staged_keys = staged_keys,
  to_staged = to_staged,
  lease = lease,
  expire_staged = expire_staged,
  created_at = created_at,
  part_missing = part_missing,
  session_full = session_full,
  parse = parse,
  text = stage_text,
  staging = staging,
  read_stage = read_stage,
  visible = visible,
}
