-- messages_stage_open: the first step of a staged append
-- (messages/stage.go), an append or replace_history too big for one
-- bounded script: an append's checks, then the session's stage taken
-- (O(1)); messages_stage_put writes its messages, messages_stage_commit
-- makes them visible in one step, messages_stage_drop removes those of a
-- stage that will not commit.
--
-- The stage is the record's msg_stage (msgstage.lua): a token, a lease
-- (ms of Redis's clock, renewed by every step), seq0 (msg_seq when it
-- opened) and what is staged. Staged messages are written into the
-- session's own messages keys with the sequence numbers seq0 + 1 ..: no
-- reader sees them (msgstage.visible), and every other write of the
-- session's messages waits while the stage lives (msgtree.begin:
-- 'staging'). A replace_history's new history is staged in keys of its
-- own (msgstage.STAGED) instead, renamed over the session's at the commit.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the stage's token
-- ARGV[3] the lease (ms); ARGV[4] '1' when ARGV[5] is the latest leaf
-- the caller expects (If-Match; a replace_history's expected_leaf), else
-- '0'; ARGV[6] the first message's parent ('latest', 'root' or 'id':
-- ARGV[7]), or 'whole': a replace_history, whose new history is staged
-- in keys of its own (the staged families) and renamed over the
-- session's at the commit, which removes every message and compaction
-- before (O(1) UNLINKs, as a clear; the ring of keys is kept); ARGV[8]
-- SESSION_MAX_MESSAGES; ARGV[9] the messages to come (0: unknown;
-- -1: none, a later part of an operation: {'ok', 'stage_lost'} when its
-- stage is gone, before any write);
-- ARGV[10] the ring's key ('' = none; an Idempotency-Key, or 'tx <id>'
-- for an operation); ARGV[11] the byte cap of a repeat's answer;
-- ARGV[12] the operation's digest ('' for an append); ARGV[13..16] the
-- first message's id and fingerprint, the last one's.
-- returns {'ok', 'open'|'started', staged, parts, last, created_at}:
-- staged and parts of a stage this token holds already (0 for a new
-- one), the id the next message goes under ('' for a root) and the
-- created_at of every message of the stage (ISO 8601, quoted as
-- stored); {'ok', 'held'} (the first and last messages are stored with
-- these fields: a retry the caller answers); the repeat {'dup',
-- message...} as messages_append's (an operation's even when none of its
-- messages is left); {'ok', 'leaf_moved', leaf}, {'ok', 'unknown_parent',
-- id}, {'ok', 'stage_lost'} (ARGV[9] -1); or a refusal: 'id_conflict',
-- 'session_full', 'operation_conflict', 'staging' or 'stage_abandoned'
-- (another stage), 'key_wrong_type'.
--- @include reply
--- @include clock
--- @include guard
--- @include session
--- @include events
--- @include search
--- @include msgtree
--- @include messages

local fmt_int, node = msgtree.fmt_int, msgtree.node
local c = msgtree.open(session.open(KEYS, ARGV))
local token = ARGV[2]
local refused = msgtree.begin(c, nil, true)
if refused then return refused end
local st = c.stage

if st then
  if st.token == token then return reply.ok('open', st.n, st.parts, st.last, msgstage.created_at(st)) end
  return msgstage.staging(c, st)
end
local lease_ms, if_match, mode, pid = tonumber(ARGV[3]), ARGV[4] == '1' and ARGV[5] or nil, ARGV[6], ARGV[7]
local max, total, key, max_bytes, digest = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10], tonumber(ARGV[11]), ARGV[12]
local first, first_fp, last, last_fp = ARGV[13], ARGV[14], ARGV[15], ARGV[16]
local whole = mode == 'whole'
-- one read of the tree (its type checked): the ring's entry, the first
-- and last messages, the parent
local ids = { first, last, pid ~= '' and pid or (c.leaf or '') }
local fields = { unpack(ids) }
if key ~= '' then fields[#fields + 1] = ' k' .. key end
local v = redis.pcall('HMGET', c.mtree, unpack(fields))
if v.err then return guard.from_error(c.mtree, 'hash', v) end
msgtree.cache(c, ids, v)
local held = key ~= '' and msgtree.ring_held(v[4] or nil)
if held then
  if digest ~= '' then
    local d, hids = string.match(held, '^(%S*) ?(.*)$')
    if d ~= digest then
      return reply.refused('operation_conflict', 'operation ' .. string.sub(key, 4) ..
        ' was already applied with another transaction; nothing was written')
    end
    held = hids
  end
  -- an operation answers as applied however its messages fared since
  -- (as messages_transaction); an append whose messages are all gone
  -- is made again
  local again = messages.dup_answer(c, held, max_bytes)
  if #again > 1 or digest ~= '' then return session.reply(c, again) end
end
-- a later part of an operation whose stage is gone opens none
if total < 0 then return reply.ok('stage_lost') end
if if_match and if_match ~= (c.leaf or '') then return reply.ok('leaf_moved', c.leaf or '') end
-- a whole new history may hold the ids of the messages it replaces
local nf, nl = not whole and node(c, first), not whole and node(c, last)
if nf and nl and nf.fp == first_fp and nl.fp == last_fp then return reply.ok('held') end
if nf then return messages.id_conflict(first) end
if nl then return messages.id_conflict(last) end
local parent = ''
if whole then
  if total > max then
    return reply.refused('session_full', 'session ' .. c.uid .. '/' .. c.sid .. ' would hold ' .. fmt_int(total) ..
      ' messages and may hold at most ' .. fmt_int(max) .. ' (SESSION_MAX_MESSAGES); nothing was written')
  end
  for i, p in ipairs(msgstage.STAGED) do session.use(c, p, msgstage.STAGED_KIND[i]) end
elseif mode == 'latest' then
  parent = c.leaf or ''
elseif mode == 'id' then
  if not node(c, pid) then return reply.ok('unknown_parent', pid) end
  parent = pid
end
if not whole and total > 0 and c.count + total > max then return msgstage.session_full(c, total, max) end
msgtree.use(c, true)
refused = session.commit(c)
if refused then return refused end
-- what a stage dropped without its last step may have left
if whole then redis.call('UNLINK', unpack(msgstage.staged_keys(c))) end
st = { token = token, seq0 = c.seq, n = 0, parent = parent, last = parent, created = c.now_text, user = false,
  parts = 0, whole = whole, key = key }
msgstage.lease(c, st, lease_ms)
local started = session.finish(c, { 'msg_stage', msgstage.text(st) })
return session.reply(c, reply.ok(started and 'started' or 'open', 0, 0, parent, msgstage.created_at(st)))
