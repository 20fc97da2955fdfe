-- clock: the Redis server's time, and the times the records and entries
-- hold (µs since the epoch; RFC 3339 / ISO 8601 text).

-- now_us is the Redis server's clock in microseconds, so pods with skewed
-- clocks agree on activity times.
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- civil_date is the UTC calendar date (year, month, day) of unix time sec
-- (days_from_civil's inverse, exact for every date).
local function civil_date(sec)
  local z = math.floor(sec / 86400) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

-- iso_time formats µs since the epoch as RFC 3339 UTC with µs.
local function iso_time(us)
  local sec = math.floor(us / 1000000)
  local y, m, d = civil_date(sec)
  local rem = sec % 86400
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%06dZ', y, m, d,
    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60, us % 1000000)
end


-- iso_time_us reads an ISO 8601 time (Python isoformat: with or without
-- fraction and offset; no offset is UTC, as Cognee writes utcnow()) as µs
-- since the epoch, or nil; entry_time_us the "time" of a stored Q&A entry.
local function iso_time_us(text)
  local y, mo, d, h, mi, sec, rest = string.match(text,
    '^(%d%d%d%d)%-(%d%d)%-(%d%d)[T ](%d%d):(%d%d):(%d%d)(.*)$')
  if not y then return nil end
  local frac, off = string.match(rest, '^%.(%d+)(.*)$')
  if not frac then frac, off = '', rest end
  local offset = 0
  if off ~= '' and off ~= 'Z' then
    local sign, oh, om = string.match(off, '^([+-])(%d%d):?(%d%d)$')
    if not sign then return nil end
    offset = (tonumber(oh) * 60 + tonumber(om)) * 60
    if sign == '-' then offset = -offset end
  end
  y, mo = tonumber(y), tonumber(mo)
  if mo <= 2 then y = y - 1 end -- days from the civil date (March-based years)
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + tonumber(d) - 1
  local days = era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  local secs = days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec) - offset
  return secs * 1000000 + tonumber(string.sub(frac .. '000000', 1, 6))
end

local function entry_time_us(el)
  local at = string.find(el, '"time"', 1, true)
  if not at then return nil end
  local text = string.match(el, '^%s*:%s*"([^"]*)"', at + 6)
  return text and iso_time_us(text)
end

-- started_at_of is a new record's started_at (µs, as a string): the time

return {
  now_us = now_us,
  civil_date = civil_date,
  iso_time = iso_time,
  iso_time_us = iso_time_us,
  entry_time_us = entry_time_us,
}
