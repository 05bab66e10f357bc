-- Record one finished sample of a batch, atomically: the per-sample marker, its record and
-- the counters change together or not at all, so a task redelivered after a crash or a lost
-- connection is counted exactly once (a marker written without its counters would leave the
-- batch one sample short for ever). The sample leaves the unfinished set in the same step,
-- so the reconciler never sends a finished sample again; the sample that finishes the batch
-- gives every key of the batch its TTL (none while the batch runs).
--
-- KEYS[1] batch meta hash, KEYS[2] outcomes hash, KEYS[3] records hash, KEYS[4] progress zset,
-- KEYS[5..] the batch's other keys (items, started, redrives, traces), for the TTL
-- ARGV[1] sample key, ARGV[2] outcome ("done" or "failed"), ARGV[3] record JSON,
-- ARGV[4] epoch counter field ("finished:eN"), ARGV[5] TTL in seconds, ARGV[6] now (unix time)
-- Returns the epoch's finished count, -1 if this sample was recorded already, or -2 if the batch
-- has no record (never created, or expired): then nothing is written, no key is made again.
if redis.call('HEXISTS', KEYS[1], 'skillbook') == 0 then
    return -2
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
    return -1
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
local finished = redis.call('HINCRBY', KEYS[1], ARGV[4], 1)
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[1], 'progress_at', ARGV[6])
local meta = redis.call('HMGET', KEYS[1], 'done', 'failed', 'total', 'sealed')
local all_done = tonumber(meta[1] or 0) + tonumber(meta[2] or 0) >= tonumber(meta[3] or 0)
if all_done and meta[4] == '1' then
    redis.call('HSETNX', KEYS[1], 'finished_at', ARGV[6])
    for i = 1, #KEYS do
        redis.call('EXPIRE', KEYS[i], ARGV[5])
    end
end
return finished
