-- compactions: a session's compactions (the messages module), the
-- overlays a path read shows in their place, and the tokens of a path with
-- them and the frozen system prompt. c is a session context msgtree.open
-- made ready.
--- @include json
--- @include session
--- @include events
--- @include msgtree

local node, fmt_int = msgtree.node, msgtree.fmt_int
-- the blocks module's frozen system prompt (its tokens count in a path's)
local PROMPT = 'agent_session_prompt' 

-- compactions returns the compactions in force, oldest first: {id, from,
-- to, seq, stokens (the summary's tokens), json}. Their number is at most
-- the cap of messages_compact.lua, so one HGETALL is bounded.
local function compactions(c)
  if c.begun then
    if not session.has(c, msgtree.MCOMP) then return {} end
  elseif redis.call('EXISTS', c.mcomp) == 0 then -- a read (no session.begin)
    return {}
  end
  local all = redis.call('HGETALL', c.mcomp)
  local by, out = {}, {}
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    local b = string.byte(f, 1)
    if b == 35 then -- '#': the meta of compaction f[2..]
      local from, to, seq, st = string.match(v, '^([^\t]*)\t([^\t]*)\t(%d+)\t(%d+)$')
      local cp = by[string.sub(f, 2)] or {}
      cp.id, cp.from, cp.to, cp.seq, cp.stokens = string.sub(f, 2), from, to, tonumber(seq), tonumber(st)
      by[cp.id] = cp
    elseif b ~= 32 then -- not ' seq'
      local cp = by[f] or {}
      cp.json = v
      by[f] = cp
    end
  end
  for _, cp in pairs(by) do
    if cp.from and cp.json then out[#out + 1] = cp end
  end
  table.sort(out, function(a, b) return a.seq < b.seq end)
  return out
end

-- on_path returns the nodes (from, to) of compaction cp when its range lies
-- on the path root..leaf, else nil.
local function on_path(c, cp, leaf)
  local to = node(c, cp.to)
  if not to or to.depth > leaf.depth or msgtree.ancestor(c, leaf, to.depth).id ~= to.id then return nil end
  local from = node(c, cp.from)
  if not from or from.depth > to.depth then return nil end
  return from, to
end

-- overlays returns the compactions on the path root..leaf, shallowest
-- first, each {c=, fd=, td= (depths), tokens= (of the range)}: c the
-- compaction (compactions).
local function overlays(c, leaf)
  local out = {}
  for _, cp in ipairs(compactions(c)) do
    local from, to = on_path(c, cp, leaf)
    if from then
      out[#out + 1] = { c = cp, fd = from.depth, td = to.depth, tokens = to.cum - from.cum + from.tokens }
    end
  end
  table.sort(out, function(a, b) return a.fd < b.fd end)
  return out
end

-- prompt_tokens is the tokens of the session's frozen system prompt (the
-- blocks module's agent_session_prompt hash), 0 without one.
local function prompt_tokens(c)
  if c.begun and not session.has(c, PROMPT) then return 0 end
  local prompt = redis.pcall('HGET', session.key(c, PROMPT), 'tokens')
  if type(prompt) == 'string' then return tonumber(prompt) or 0 end
  return 0
end

-- path_tokens is the tokens of the path root..n as read, plus the frozen
-- system prompt's.
local function path_tokens(c, n)
  local t = 0
  if n then
    t = n.cum
    for _, o in ipairs(overlays(c, n)) do t = t - o.tokens + o.c.stokens end
  end
  return t + prompt_tokens(c)
end

-- synthetic is the message that stands for overlay o on a path.
local function synthetic(o)
  local cp = o.c
  return '{"id":"compaction:' .. cp.id .. '","role":"system","content":' .. json.field_raw(cp.json, 'summary') ..
    ',"compaction":{"id":"' .. cp.id .. '","from_id":"' .. cp.from .. '","to_id":"' .. cp.to .. '"},"tokens":' ..
    fmt_int(cp.stokens) .. '}'
end

-- drop_compactions deletes the compactions with an endpoint in gone (a set
-- of message ids).
local function drop_compactions(c, gone)
  if not session.has(c, msgtree.MCOMP) then return end
  for _, cp in ipairs(compactions(c)) do
    if gone[cp.from] or gone[cp.to] then redis.call('HDEL', c.mcomp, cp.id, '#' .. cp.id) end
  end
end

-- suggest_crossed emits compaction_suggested when the latest path's tokens
-- went from before to after across threshold (0 = never) upward.
local function suggest_crossed(c, threshold, before, after)
  if threshold > 0 and before <= threshold and after > threshold then
    events.emit(c, 'compaction_suggested', 'message', nil,
      '{"total_tokens":' .. fmt_int(after) .. ',"threshold":' .. fmt_int(threshold) .. '}')
  end
end

return {
  compactions = compactions,
  on_path = on_path,
  overlays = overlays,
  prompt_tokens = prompt_tokens,
  path_tokens = path_tokens,
  synthetic = synthetic,
  drop_compactions = drop_compactions,
  suggest_crossed = suggest_crossed,
}
