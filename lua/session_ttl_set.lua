-- session_ttl_set: give the session its own TTL and apply it to every key of
-- the session at once (and to Cognee's lists, whatever wrote them). Later
-- writes slide to this TTL instead of SESSION_TTL_SECONDS, so a slide never
-- shortens it.
-- KEYS[1] the session's record (lib/session.lua)
-- ARGV[1] the core's settings (lib/session.lua)
-- ARGV[2] the TTL in seconds; 0 = no expiry (persist)
-- emits ttl_changed {ttl_seconds}.
-- returns (reply.lua) {'ok'}, or {'missing'} when the session does not
--   exist (nothing is created); {'refused', ...}.
--- @include reply
--- @include session
--- @include events

local c = session.open(KEYS, ARGV)
local refused = session.begin(c)
if refused then return refused end
if not session.exists(c) then return reply.missing() end
local t = tonumber(ARGV[2])
local was = c.own_ttl
session.set_ttl(c, t)
events.use(c)
refused = session.commit(c, { force = true })
if refused then return refused end
events.emit(c, 'ttl_changed', 'state', nil, '{"ttl_seconds":' .. string.format('%d', t) .. '}')
session.finish(c, { 'ttl_seconds', ARGV[2] })
session.own_ttl_changed(c, was, t)
return session.reply(c, reply.ok())
