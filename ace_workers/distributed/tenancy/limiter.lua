-- The fleet-wide LLM limiter (limiter.py): one atomic call per LLM attempt to reserve, one to settle.
--
-- KEYS (reserve, settle): 1 reservations, 2 expiry, 3 reserved, 4 rate:MODEL, 5 throttled,
--   6 spend model day, 7 spend model month, 8 spend * day, 9 spend * month, 10 models:TENANT
-- KEYS (throttle): 1 rate:MODEL, 2 throttled
-- ARGV[1] is the operation, ARGV[2] its arguments joined by the unit separator (one argument
-- instead of twenty: redis-py's packing of each argument costs more than the script's run).
-- ARG[2] is the time in seconds ("" for the server's clock), the rest per operation.
--
-- Pacing is GCRA (the generic cell rate algorithm, as in redis-gcra): each model keeps the
-- theoretical arrival time of its next request (treq) and of its next token (ttok); a call
-- may start once both are at most `burst` seconds ahead of it. A call that would start
-- within `book` seconds books its slot now and is told how long to sleep first.

local US = '\31'

local function fail(message)
  error({err = 'ERR ace-limiter: ' .. message})
end

local function now_of(given)
  if given ~= '' then
    return tonumber(given)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- A number read from hash `key` field `field`: nil when absent, an error naming both when not a number.
local function hnum(key, field)
  local raw = redis.call('HGET', key, field)
  if not raw then
    return nil
  end
  local n = tonumber(raw)
  if not n or n ~= n then
    fail('key ' .. key .. ' field ' .. field .. ' holds ' .. string.format('%q', raw) .. ', not a number')
  end
  return n
end

local function opt(value)
  if value == nil or value == '' then
    return nil
  end
  return tonumber(value)
end

local function split(text)
  local parts = {}
  for part in string.gmatch(text .. US, '([^' .. US .. ']*)' .. US) do
    parts[#parts + 1] = part
  end
  return parts
end

local function fmt(n)
  return string.format('%.17g', n)
end

-- Drop reservation `id`: subtract what it holds from the reserved totals. Returns its parts or nil.
local function drop(keys, id)
  local record = redis.call('HGET', keys[1], id)
  redis.call('ZREM', keys[2], id)
  if not record then
    return nil
  end
  local parts = split(record)
  local tokens, cost = tonumber(parts[3]), tonumber(parts[4])
  if #parts ~= 4 or not tokens or not cost then
    redis.call('HDEL', keys[1], id)
    fail('key ' .. keys[1] .. ' field ' .. id .. ' holds ' .. string.format('%q', record) .. ', not a reservation')
  end
  redis.call('HDEL', keys[1], id)
  for _, scope in ipairs({parts[2], '*'}) do
    local base = parts[1] .. US .. scope .. US
    for kind, amount in pairs({tokens = tokens, cost = cost}) do
      local left = tonumber(redis.call('HINCRBYFLOAT', keys[3], base .. kind, -amount))
      if left <= 1e-9 then
        redis.call('HDEL', keys[3], base .. kind)
      end
    end
  end
  return parts
end

local function purge(keys, now)
  local expired = redis.call('ZRANGEBYSCORE', keys[2], '-inf', now, 'LIMIT', 0, 100)
  for _, id in ipairs(expired) do
    drop(keys, id)
  end
end

-- The model's rate (requests per minute) now, after any 429 slowdown and its recovery; nil: none.
-- Clears a slowdown that has run its course.
local function effective_rpm(rate_key, throttled_key, model, now, rpm, step, quiet)
  local slowed = hnum(rate_key, 'slowed_rpm')
  if not slowed then
    return rpm
  end
  local since = hnum(rate_key, 'slowed_at') or now
  local rpm_now = slowed + step * math.max(0, now - since)
  if (rpm and rpm_now >= rpm) or (not rpm and now - since >= quiet) then
    redis.call('HDEL', rate_key, 'slowed_rpm', 'slowed_at')
    redis.call('HDEL', throttled_key, model)
    return rpm
  end
  return rpm_now
end

local ARG = split(ARGV[2])
table.insert(ARG, 1, ARGV[1])
local op = ARG[1]
local now = now_of(ARG[2])

if op == 'reserve' then
  local id, tenant, model = ARG[3], ARG[4], ARG[5]
  local est_tokens, est_cost = tonumber(ARG[6]), tonumber(ARG[7])
  local hold, book = tonumber(ARG[8]), tonumber(ARG[9])
  local rpm, tpm, burst = opt(ARG[18]), opt(ARG[19]), tonumber(ARG[20])
  local step, quiet, paced = tonumber(ARG[21]), tonumber(ARG[22]), ARG[23] == '1'
  purge(KEYS, now)

  -- Budgets: ARG[10..17] are the limits, model scope then "*", each day tokens, month tokens,
  -- day cost, month cost ("" when not set).
  local scopes = {{model, KEYS[6], KEYS[7]}, {'*', KEYS[8], KEYS[9]}}
  for s, scope in ipairs(scopes) do
    for i = 1, 4 do
      local limit = opt(ARG[9 + (s - 1) * 4 + i])
      if limit then
        local kind = (i <= 2) and 'tokens' or 'cost'
        local window = (i % 2 == 1) and scope[2] or scope[3]
        local estimate = (kind == 'tokens') and est_tokens or est_cost
        local committed = (hnum(window, kind) or 0)
          + (hnum(KEYS[3], tenant .. US .. scope[1] .. US .. kind) or 0)
        -- The first call of a window goes through whatever its estimate: one call may overshoot.
        if committed >= limit or (committed > 0 and committed + estimate > limit) then
          return {'budget', tostring((s - 1) * 4 + i), fmt(committed)}
        end
      end
    end
  end

  -- Pacing, fleet-wide per model: requests, tokens, and a 429's block.
  local start = now
  local slots = {}
  if paced then
    local rpm_now = effective_rpm(KEYS[4], KEYS[5], model, now, rpm, step, quiet)
    local blocked = hnum(KEYS[4], 'blocked_until')
    if blocked and blocked > start then
      start = blocked
    end
    if rpm_now then
      local tat = hnum(KEYS[4], 'treq') or now
      start = math.max(start, tat - burst)
      slots.treq = {tat, 60 / rpm_now}
    end
    if tpm and est_tokens > 0 then
      local tat = hnum(KEYS[4], 'ttok') or now
      start = math.max(start, tat - burst)
      slots.ttok = {tat, est_tokens * 60 / tpm}
    end
    if start - now > book then
      return {'wait', fmt(start - now)}
    end
    for field, slot in pairs(slots) do
      redis.call('HSET', KEYS[4], field, fmt(math.max(slot[1], start) + slot[2]))
    end
    redis.call('EXPIRE', KEYS[4], 3600)
  end

  redis.call('HSET', KEYS[1], id, tenant .. US .. model .. US .. fmt(est_tokens) .. US .. fmt(est_cost))
  redis.call('ZADD', KEYS[2], start + hold, id)
  for _, scope in ipairs({model, '*'}) do
    local base = tenant .. US .. scope .. US
    redis.call('HINCRBYFLOAT', KEYS[3], base .. 'tokens', est_tokens)
    redis.call('HINCRBYFLOAT', KEYS[3], base .. 'cost', est_cost)
  end
  return {'ok', fmt(start - now)}
end

if op == 'settle' then
  local id, tenant, model = ARG[3], ARG[4], ARG[5]
  local tokens, cost = tonumber(ARG[6]), tonumber(ARG[7])
  local tpm = opt(ARG[8])
  local day_end, month_end = tonumber(ARG[9]), tonumber(ARG[10])
  local parts = drop(KEYS, id)
  if parts and tpm then
    -- The token schedule booked the estimate: move it by what the call really used.
    local tat = hnum(KEYS[4], 'ttok')
    if tat then
      local est = tonumber(parts[3])
      redis.call('HSET', KEYS[4], 'ttok', fmt(math.max(now, tat + (tokens - est) * 60 / tpm)))
    end
  end
  for i, key in ipairs({KEYS[6], KEYS[7], KEYS[8], KEYS[9]}) do
    redis.call('HINCRBY', key, 'tokens', tokens)
    redis.call('HINCRBYFLOAT', key, 'cost', cost)
    redis.call('HINCRBY', key, 'requests', 1)
    -- Relative to `now`, so a window expires when it ends by the limiter's clock, whichever it is.
    redis.call('EXPIRE', key, math.ceil(((i % 2 == 1) and day_end or month_end) - now) + 60)
  end
  redis.call('SADD', KEYS[10], model)
  redis.call('EXPIRE', KEYS[10], math.ceil(month_end - now) + 60)
  return parts and 1 or 0
end

if op == 'throttle' then
  local model, retry_after = ARG[3], tonumber(ARG[4])
  local rpm, step, quiet = opt(ARG[5]), tonumber(ARG[6]), tonumber(ARG[7])
  local start_rpm, gap, floor = tonumber(ARG[8]), tonumber(ARG[9]), tonumber(ARG[10])
  local blocked = math.max(hnum(KEYS[1], 'blocked_until') or 0, now + retry_after)
  redis.call('HSET', KEYS[1], 'blocked_until', fmt(blocked))
  local since = hnum(KEYS[1], 'slowed_at')
  -- One cut per `gap` seconds: the calls already in flight when the first 429 came answer
  -- 429 too, and each of them halving the rate again would throttle far below the provider's.
  if not since or now - since >= gap then
    local rpm_now = effective_rpm(KEYS[1], KEYS[2], model, now, rpm, step, quiet) or (2 * start_rpm)
    local slowed = math.max(floor, rpm_now / 2)
    redis.call('HSET', KEYS[1], 'slowed_rpm', fmt(slowed), 'slowed_at', fmt(now))
    local recovered = rpm and (now + (rpm - slowed) / step) or (now + quiet)
    redis.call('HSET', KEYS[2], model, fmt(math.max(recovered, blocked)))
  end
  redis.call('EXPIRE', KEYS[1], 3600)
  return {fmt(blocked), redis.call('HGET', KEYS[2], model) or fmt(blocked)}
end

fail('unknown operation ' .. tostring(op))
