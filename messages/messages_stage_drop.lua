-- messages_stage_drop: one step of removing the messages of a stage that
-- will not commit (its writer's, or one whose lease ran out), at most
-- ARGV[3] of them (DropChunk).
--
-- The stage: messages_stage_open.lua and msgstage.lua.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the stage's token ('' = an abandoned stage, whoever's)
-- ARGV[3] the most messages to remove.
-- returns {'ok', removed, done} (done 1: no stage of the token is left).
-- An abandoned stage's first drop takes it from its writer (its token
-- cleared): that writer's next step is stage_lost.
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

if not st or (token ~= '' and st.token ~= token) then return reply.ok(0, 1) end
if token == '' then
  local abandoned = msgstage.staging(c, st)
  if abandoned[2] == 'staging' then return abandoned end
  -- the stage is taken from its writer before its first chunk goes: a
  -- step of the writer between two chunks then finds it lost, rather
  -- than staging on (and committing) what the drop removed
  if st.token ~= '' then
    st.token = ''
    redis.call('HSET', c.record, 'msg_stage', msgstage.text(st))
  end
end
if st.whole then
  -- the staged keys go, and their families off the record's fams (no
  -- slide or delete touches them then): a quiet commit, only checks
  for _, p in ipairs(msgstage.STAGED) do session.drop(c, p) end
  refused = session.commit(c, { quiet = true })
  if refused then return refused end
  redis.call('UNLINK', unpack(msgstage.staged_keys(c)))
  redis.call('HDEL', c.record, 'msg_stage')
  session.finish(c)
  return reply.ok(0, 1)
end
-- every message after seq0 is the stage's: no other write took a
-- sequence number while it lived
local ids = redis.call('ZRANGEBYSCORE', c.morder, '(' .. fmt_int(st.seq0), '+inf', 'LIMIT', 0, tonumber(ARGV[3]))
if #ids > 0 then
  msgtree.cache(c, ids, msgtree.hmget_chunks(c.mtree, ids))
  local kids = {}
  for _, id in ipairs(ids) do
    local n = node(c, id)
    if n then kids[#kids + 1] = msgtree.kid_member(n) end
  end
  redis.call('HDEL', c.msgs, unpack(ids))
  redis.call('HDEL', c.mtree, unpack(ids))
  redis.call('ZREM', c.morder, unpack(ids))
  if #kids > 0 then redis.call('ZREM', c.mkids, unpack(kids)) end
end
if #ids < tonumber(ARGV[3]) then
  redis.call('HDEL', c.record, 'msg_stage')
  return reply.ok(#ids, 1)
end
return reply.ok(#ids, 0)
