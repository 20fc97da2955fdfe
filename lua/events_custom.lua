--! prelude: session_lib
-- events_custom: publish a caller's own event (x-<name>) on the session's
-- event stream; counts as activity.
-- KEYS[1..15] the session's keys, indexes and totals (session_lib.lua)
-- ARGV[1..4] TTL, max entries, user_id, session_id (session_lib.lua)
-- ARGV[5] the event's type, x-<name> (validated by the sidecar)
-- ARGV[6] its data, JSON of at most 8 KiB (validated by the sidecar)
-- returns the event id; 0 when there is no such session, {-1, 'wrong_type',
--   message} when a record field it reads is not what it should be (nothing is
--   written).
local refused = guard('keep')
if refused then return refused end
if not session_exists() then return 0 end
local bad = check_finish(nil, false)
if bad then return { -1, 'wrong_type', bad } end
local id = emit(ARGV[5], 'custom', nil, ARGV[6])
finish_write()
return id
