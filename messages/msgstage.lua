-- msgstage: a staged append in progress (messages_stage.lua), as the
-- record's msg_stage holds it, and what the messages' readers and writers
-- make of it: a write waits (staging), a reader does not see its messages
-- (visible).
--- @include reply
--- @include guard
--- @include session

local function fmt_int(x) return string.format('%d', x) end

-- parse reads the record's msg_stage (a staged append in progress,
-- messages_stage.lua): "token \t until (ms) \t seq0 \t staged \t parent
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
-- its messages, messages_stage.lua 'drop', and tries again).
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

return {
  parse = parse,
  text = stage_text,
  staging = staging,
  read_stage = read_stage,
  visible = visible,
}
