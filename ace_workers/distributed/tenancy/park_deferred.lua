-- Park a step message that a tenant's spent budget refused, once: a message delivered again (its
-- worker died before acknowledging it) finds its entry there and parks nothing more. The entry's
-- parking time orders the releases (oldest first). The refusal (model, limit, spent, budget, reset
-- time) is recorded in any case: it says when the tenant's budget has room again.
--
-- KEYS[1] entries hash, KEYS[2] order zset, KEYS[3] blocked hash
-- ARGV[1] entry field, ARGV[2] entry JSON, ARGV[3] now (unix time), ARGV[4] blocked field,
-- ARGV[5] the refusal's JSON
-- Returns 1 if the entry was parked, 0 if it was parked already.
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
    return 0
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
