-- sessions_append.lua: wrk script of bench/sessions_load.sh (phase b).
-- POSTs one Q&A entry per request to .../sessions/{s}/entries, every entry
-- with a unique qa_id, each wrk thread on its own sessions (a new session
-- every 1000 entries). The Q&A text is the one of sessions/bench_test.go.

local next_tid = 1
function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
end

local n = 0
local headers = { ["Content-Type"] = "application/json" }
local fields = '"question":"What did the quarterly report say about revenue growth in the EMEA region?",'
  .. '"context":"Q3 report, section 4.2: EMEA revenue grew 12% year over year, driven by the DACH markets and new enterprise contracts in the Nordics.",'
  .. '"answer":"EMEA revenue grew 12% year over year in Q3, mostly from DACH and new Nordic enterprise contracts."}'

function request()
  n = n + 1
  local path = "/v1/users/bench/sessions/t" .. tid .. "-" .. math.floor(n / 1000) .. "/entries"
  local body = '{"qa_id":"t' .. tid .. '-' .. n .. '",' .. fields
  return wrk.format("POST", path, headers, body)
end
