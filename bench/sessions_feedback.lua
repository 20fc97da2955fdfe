-- sessions_feedback.lua: wrk script of bench/sessions_load.sh (phase d).
-- PUTs feedback on a random entry q-0 .. q-(N-1) of the session that
-- sessions_cognee.py preload-sidecar wrote (user bench, session fb, N = 500).

local entries = 500
local headers = { ["Content-Type"] = "application/json" }

function init(args)
  math.randomseed(os.time())
  if args[1] then entries = tonumber(args[1]) end
end

function request()
  local path = "/v1/users/bench/sessions/fb/entries/q-" .. math.random(0, entries - 1) .. "/feedback"
  local body = '{"feedback_text":"useful, thanks","feedback_score":' .. math.random(1, 5) .. '}'
  return wrk.format("PUT", path, headers, body)
end
