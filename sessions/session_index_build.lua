-- session_index_build: one bounded step of making the id index of one of
-- the session's lists cover the whole list (lib/idindex.lua, "The id
-- indexes"): check the index still describes a prefix of the list (else
-- start it again from position 0), then index at most one step of the
-- elements it does not cover. A script that needs the index complete
-- answers {'index_build', which}; its caller runs this until it answers 1,
-- then that script again. It writes nothing but the index (a new one gets
-- its list's TTL) and slides no TTL.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] SESSION_MAX_ENTRIES
-- ARGV[3] 'qa' (the entries list by qa_id) or 'context' (the context
--   list by id)
-- returns (reply.lua) {'ok', 1} when the index covers the list, {'ok', 0}
--   when more steps are needed; {'refused', ...}.
--- @include reply
--- @include idindex
--- @include session

local c = idindex.open(session.open(KEYS, ARGV), ARGV[2])
local which = ARGV[3]
if which ~= 'qa' and which ~= 'context' then
  return redis.error_reply('ERR session_index_build: unknown index ' .. which)
end
local list = idindex.index_keys(c, which)
local llen = redis.pcall('LLEN', list)
if type(llen) == 'table' then return llen end
if llen == 0 then return reply.ok(1) end
local done = idindex.index_sync(c, which, llen)
if type(done) == 'table' then return done end -- the index is not a hash
if done then return reply.ok(1) end
return reply.ok(0)
