-- Record one finished sample of a batch, atomically: the per-sample marker, its record and
-- the counters change together or not at all, so a task redelivered after a crash or a lost
-- connection is counted exactly once (a marker written without its counters would leave the
-- batch one sample short for ever). The sample leaves the unfinished set in the same step,
-- so the reconciler never sends a finished sample again, and is marked started (a sample that
-- failed before its first step could start, as for an unknown recipe, is counted as finished,
-- never as queued). A sample its dead letter's retry reopened (reopen_sample.lua) is counted
-- once more as done or failed, but not again in its epoch, which counted it when it first
-- failed. The sample that finishes the batch gives every key of the batch its TTL (none while
-- the batch runs). The step that finished (or failed) the sample is counted in the batch's steps
-- hash in the same step (count_step.lua is prepended): a done sample's last step once, a failure
-- at the step it failed at (a failure no step index names, as the reconciler's, at none).
--
-- KEYS[1] batch meta hash, KEYS[2] outcomes hash, KEYS[3] records hash, KEYS[4] progress zset,
-- KEYS[5] started hash, KEYS[6] reopened hash, KEYS[7] steps hash, KEYS[8] stepped hash,
-- KEYS[9] waiting hash (a finished sample waits for no budget), KEYS[10..] the batch's other keys
-- (items, redrives, traces), for the TTL
-- ARGV[1] sample key, ARGV[2] outcome ("done" or "failed"), ARGV[3] record JSON,
-- ARGV[4] the sample's epoch N (its counter is the field "finished:eN"), ARGV[5] TTL in seconds, ARGV[6] now (unix time),
-- ARGV[7] the step's index ('' if none is known), ARGV[8] its name, and for a done sample the last
-- step's run: ARGV[9] seconds, ARGV[10] prompt tokens, ARGV[11] completion tokens, ARGV[12] cost ('')
-- Returns {the epoch's finished count, quiet}: quiet 1 when admission need not be told of this
-- finish, as the batch's finished count over all epochs is within the mark admission left
-- (quiet_until: see tenancy/leave_and_admit.lua), else 0. The count is -1 if this sample was
-- recorded already, or -2 if the batch has no record (never created, or expired): then nothing is
-- written, no key is made again.
if redis.call('HEXISTS', KEYS[1], 'skillbook') == 0 then
    return {-2, 0}
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
    return {-1, 0}
end
local epoch_field = 'finished:e' .. ARGV[4]
local retried = redis.call('HDEL', KEYS[6], ARGV[1]) == 1
local record = ARGV[3]
if retried then
    -- The record is a JSON object with at least its outcome: the mark goes in front, the rest as sent.
    record = '{"retried": true, ' .. string.sub(record, 2)
    if ARGV[2] == 'done' then
        redis.call('HINCRBY', KEYS[1], 'retried', 1)
    end
end
redis.call('HSET', KEYS[3], ARGV[1], record)
redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
local finished
if retried then
    finished = tonumber(redis.call('HGET', KEYS[1], epoch_field) or 0)
else
    finished = redis.call('HINCRBY', KEYS[1], epoch_field, 1)
end
if ARGV[7] ~= '' then
    if ARGV[2] == 'done' then
        count_step(KEYS[7], KEYS[8], ARGV[1], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12])
    else
        redis.call('HSET', KEYS[7], ARGV[7] .. ':name', ARGV[8])
        redis.call('HINCRBY', KEYS[7], ARGV[7] .. ':failed', 1)
    end
end
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[9], ARGV[1])
redis.call('HSETNX', KEYS[5], ARGV[1], 1)
redis.call('HSET', KEYS[1], 'progress_at', ARGV[6])
local meta = redis.call('HMGET', KEYS[1], 'done', 'failed', 'total', 'sealed', 'per_epoch', 'quiet_until')
local all_done = tonumber(meta[1] or 0) + tonumber(meta[2] or 0) >= tonumber(meta[3] or 0)
if all_done and meta[4] == '1' then
    redis.call('HSETNX', KEYS[1], 'finished_at', ARGV[6])
    for i = 1, #KEYS do
        redis.call('EXPIRE', KEYS[i], ARGV[5])
    end
end
-- Untrusted numbers: what is not one counts as 0 (no mark: every finish is told).
local before = (math.max(1, tonumber(ARGV[4]) or 1) - 1) * (tonumber(meta[5]) or 0)
local quiet = before + finished <= (tonumber(meta[6]) or 0)
return {finished, quiet and 1 or 0}
