-- Mark a sample of a batch as waiting for its tenant's budget, atomically with the checks that say
-- whether it may wait: a batch with no record gets no key written (a message for an unknown batch
-- leaves nothing behind), a cancelled batch's samples wait for nothing, and a sample that finished
-- meanwhile (a late duplicate delivery) is not counted as waiting again.
--
-- KEYS[1] batch meta hash, KEYS[2] outcomes hash, KEYS[3] waiting hash
-- ARGV[1] sample key, ARGV[2] the mark's JSON
-- Returns 1 if the sample is marked, 0 if it finished already, -2 if the batch has no record,
-- -3 if the batch was cancelled.
if redis.call('HEXISTS', KEYS[1], 'skillbook') == 0 then
    return -2
end
if redis.call('HEXISTS', KEYS[1], 'cancelled') == 1 then
    return -3
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
    return 0
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
return 1
