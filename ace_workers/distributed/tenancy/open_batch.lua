-- Open a batch for admission up to LIMIT of its samples (counted over all its epochs): a new batch
-- once its inputs are stored, or the next epoch once the last one finished. The limit never goes
-- down (a late opener of an earlier epoch changes nothing), and the batch joins the ready set,
-- behind those there already, if it has samples left to admit.
--
-- KEYS as in admission_state.lua.
-- ARGV[1] batch id, ARGV[2] its tenant, ARGV[3] the limit, ARGV[4] samples per epoch,
-- ARGV[5] most of its samples in flight ('' leaves it as it is, 0 lifts it).
-- Returns the batch's admitted count.
local batch = ARGV[1]
redis.call('HSET', KEYS[1], batch, ARGV[2])
redis.call('HSET', KEYS[7], batch, ARGV[4])
if ARGV[5] ~= '' then
    if num(ARGV[5]) > 0 then
        redis.call('HSET', KEYS[6], batch, ARGV[5])
    else
        redis.call('HDEL', KEYS[6], batch)
    end
end
local limit = math.max(num(redis.call('HGET', KEYS[5], batch)), num(ARGV[3]))
redis.call('HSET', KEYS[5], batch, limit)
local admitted = num(redis.call('HGET', KEYS[2], batch))
if admitted < limit and not redis.call('ZSCORE', KEYS[8], batch) then
    redis.call('ZADD', KEYS[8], redis.call('INCR', KEYS[9]), batch)
end
return admitted
