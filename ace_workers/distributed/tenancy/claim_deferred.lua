-- Claim one parked entry for sending, atomically: of two releasers asking for the same entry, one
-- gets it and the other nothing, so no sample is sent twice by them.
--
-- KEYS[1] entries hash, KEYS[2] order zset
-- ARGV[1] entry field
-- Returns the entry's JSON, or false if another releaser claimed it (or it never was parked).
local entry = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if not entry then
    return false
end
redis.call('HDEL', KEYS[1], ARGV[1])
return entry
