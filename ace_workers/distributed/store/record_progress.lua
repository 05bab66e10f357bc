-- Note that a step of a sample started, atomically with the checks that say whether it may:
-- a batch with no record (never created, or expired) gets no key written, so a message for
-- an unknown batch leaves nothing behind (written unchecked, 3,000 such messages left a
-- meta hash and a started hash of 3,000 fields that never expired); a cancelled batch's keys,
-- which expire, get no new one either.
--
-- A sample that waited for its tenant's budget is running again: its waiting mark goes.
--
-- KEYS[1] batch meta hash, KEYS[2] progress zset, KEYS[3] started hash, KEYS[4] waiting hash
-- ARGV[1] sample key, ARGV[2] now (unix time), ARGV[3] "1" if this is the sample's first step
-- Returns 1 if the step may run, 0 if the batch was cancelled, -2 if it has no record.
if redis.call('HEXISTS', KEYS[1], 'skillbook') == 0 then
    return -2
end
if redis.call('HEXISTS', KEYS[1], 'cancelled') == 1 then
    return 0
end
-- XX: a sample finished meanwhile (a late duplicate delivery) is not put back among the unfinished.
redis.call('ZADD', KEYS[2], 'XX', ARGV[2], ARGV[1])
redis.call('HSET', KEYS[1], 'progress_at', ARGV[2])
redis.call('HDEL', KEYS[4], ARGV[1])
if ARGV[3] == '1' then
    redis.call('HSETNX', KEYS[3], ARGV[1], 1)
end
return 1
