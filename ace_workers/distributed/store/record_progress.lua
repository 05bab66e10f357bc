-- Note that a step of a sample started, atomically with the checks that say whether it may:
-- a batch with no record (never created, or expired) gets no key written, so a message for
-- an unknown batch leaves nothing behind (written unchecked, 3,000 such messages left a
-- meta hash and a started hash of 3,000 fields that never expired); a cancelled batch's keys,
-- which expire, get no new one either.
--
-- A sample that waited for its tenant's budget is running again: its waiting mark goes.
--
-- The run of the step before it, which its message carries, is counted in the batch's steps in
-- the same round trip (count_step.lua is prepended): a step with more to run after it costs no
-- round trip of its own for its figures. Not for a finished batch (its keys expire, or have).
--
-- KEYS[1] batch meta hash, KEYS[2] progress zset, KEYS[3] started hash, KEYS[4] waiting hash,
-- KEYS[5] steps hash, KEYS[6] stepped hash
-- ARGV[1] sample key, ARGV[2] now (unix time), ARGV[3] "1" if this is the sample's first step,
-- and the step before's run, if the message carried one: ARGV[4] its index, ARGV[5] its name,
-- ARGV[6] seconds, ARGV[7] prompt tokens, ARGV[8] completion tokens, ARGV[9] cost ('' when not priced)
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
if #ARGV >= 9 and redis.call('HEXISTS', KEYS[1], 'finished_at') == 0 then
    count_step(KEYS[5], KEYS[6], ARGV[1], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
end
return 1
