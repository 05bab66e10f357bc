-- The first reads of an apply, in one round trip under the apply's WATCH (read-only: a script that
-- only reads leaves the WATCH as it was): the meta fields an apply plans with, the skills its batch
-- names with their provenance, and the content-index fields of its ADDs. What they lead to (a skill
-- an UPDATE restates, ids allocated that turn up taken) is read after, as before.
--
-- KEYS[1] meta hash, KEYS[2] skills hash, KEYS[3] provenance hash, KEYS[4] content-index hash
-- ARGV[1] how many skill ids follow, then the ids, then the index fields
-- Returns {next_id, next_order, active_skills}, the skills, their provenance and the index fields,
-- each as HMGET answers (an empty list for no ids or no fields).
local count = tonumber(ARGV[1])
local ids, fields = {}, {}
for i = 2, #ARGV do
    if i <= count + 1 then
        table.insert(ids, ARGV[i])
    else
        table.insert(fields, ARGV[i])
    end
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
return {meta, skills, provenance, index}
