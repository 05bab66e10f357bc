-- Drop a batch from admission (it finished, was cancelled, or expired): its samples in flight
-- free their slots, since they are counted from its fields only.
--
-- KEYS as in admission_state.lua. ARGV[1] batch id. Returns 1 if the batch was known.
local batch = ARGV[1]
local known = redis.call('HDEL', KEYS[1], ARGV[1])
for i = 2, 7 do
    redis.call('HDEL', KEYS[i], batch)
end
redis.call('ZREM', KEYS[8], batch)
redis.call('HDEL', KEYS[11], batch)
-- Its parked samples' marks: the batch id's glob characters escaped for MATCH.
local pattern = string.gsub(parked_field(batch, ''), '([%*%?%[%]\\])', '\\%1') .. '*'
local cursor = '0'
repeat
    local page = redis.call('HSCAN', KEYS[10], cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = page[1]
    for i = 1, #page[2], 2 do
        redis.call('HDEL', KEYS[10], page[2][i])
    end
until cursor == '0'
return known
