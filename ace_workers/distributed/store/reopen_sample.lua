-- Reopen a failed sample whose dead letter is being sent back, atomically: it leaves the failed
-- count and becomes a running sample again (its outcome marker is removed, so the retry's last
-- step records it once more; the reopened mark tells finish_sample.lua that its epoch counted it
-- already). The batch runs again: its keys lose their TTL until it finishes anew, and the sample
-- is back among the unfinished, so the reconciler sends it again should the retry's message be lost.
-- The step it failed at (its record's step_index, if any) counts it failed no more.
--
-- KEYS[1] batch meta hash, KEYS[2] outcomes hash, KEYS[3] progress zset, KEYS[4] reopened hash,
-- KEYS[5] records hash, KEYS[6] steps hash, KEYS[7..] the batch's other keys, to persist
-- ARGV[1] sample key, ARGV[2] now (unix time)
-- Returns 1 if the sample was reopened, 0 if it is not failed (done, or in flight again),
-- -2 if the batch has no record, -3 if the batch was cancelled.
if redis.call('HEXISTS', KEYS[1], 'skillbook') == 0 then
    return -2
end
if redis.call('HEXISTS', KEYS[1], 'cancelled') == 1 then
    return -3
end
if redis.call('HGET', KEYS[2], ARGV[1]) ~= 'failed' then
    return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
local decoded, record = pcall(cjson.decode, redis.call('HGET', KEYS[5], ARGV[1]) or '{}')
local step = decoded and type(record) == 'table' and record['step_index']
if type(step) == 'number' then
    redis.call('HINCRBY', KEYS[6], string.format('%d', step) .. ':failed', -1)
end
redis.call('HINCRBY', KEYS[1], 'failed', -1)
redis.call('HSET', KEYS[4], ARGV[1], 1)
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[1], 'progress_at', ARGV[2])
redis.call('HDEL', KEYS[1], 'finished_at')
for i = 1, #KEYS do
    redis.call('PERSIST', KEYS[i])
end
return 1
