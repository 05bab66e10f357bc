-- Record one finished sample of a batch, atomically: the per-sample marker, its record and
-- the counters change together or not at all, so a task redelivered after a crash or a lost
-- connection is counted exactly once (a marker written without its counters would leave the
-- batch one sample short for ever).
--
-- KEYS[1] batch meta hash, KEYS[2] outcomes hash, KEYS[3] records hash
-- ARGV[1] sample key, ARGV[2] outcome ("done" or "failed"), ARGV[3] record JSON,
-- ARGV[4] epoch counter field ("finished:eN"), ARGV[5] TTL in seconds
-- Returns the epoch's finished count, or -1 if this sample was recorded already.
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
    return -1
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
local finished = redis.call('HINCRBY', KEYS[1], ARGV[4], 1)
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return finished
