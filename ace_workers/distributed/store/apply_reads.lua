-- The reads of an apply, in one round trip under the apply's WATCH (read-only: a script that only
-- reads leaves the WATCH as it was). First call: the watched string keys' values (the version, the
-- idempotency record, the review policy), the meta fields an apply plans with, the skills its batch
-- names with their provenance, and the content-index fields of its ADDs. Later calls: what those
-- lead to (a skill an UPDATE restates, ids allocated that turn up taken), skills and fields only.
--
-- KEYS[1] meta hash, KEYS[2] skills hash, KEYS[3] provenance hash, KEYS[4] content-index hash,
-- KEYS[5..] string keys whose values to return (none on a later call)
-- ARGV[1] how many skill ids follow, then the ids, then the index fields
-- Returns {next_id, next_order, active_skills}, the skills, their provenance, the index fields and
-- the string keys' values, each as HMGET and MGET answer (an empty list for none asked).
local count = tonumber(ARGV[1])
local ids, fields = {}, {}
for i = 2, #ARGV do
    if i <= count + 1 then
        table.insert(ids, ARGV[i])
    else
        table.insert(fields, ARGV[i])
    end
end
local values = {}
if #KEYS > 4 then
    -- MGET, as the client read them before: a key of another type reads as nil, not an error.
    values = redis.call('MGET', unpack(KEYS, 5))
end
local meta = redis.call('HMGET', KEYS[1], 'next_id', 'next_order', 'active_skills')
local skills, provenance, index = {}, {}, {}
if #ids > 0 then
    skills = redis.call('HMGET', KEYS[2], unpack(ids))
    provenance = redis.call('HMGET', KEYS[3], unpack(ids))
end
if #fields > 0 then
    index = redis.call('HMGET', KEYS[4], unpack(fields))
end
return {meta, skills, provenance, index, values}
