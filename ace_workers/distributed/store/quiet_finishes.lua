-- Mark how far a batch's finishes need not be told to admission (the quiet_until of
-- tenancy/leave_and_admit.lua): finish_sample.lua answers quiet for each finish within it.
-- Only on a batch that has a record, so a batch expired meanwhile is not made again without a TTL.
--
-- KEYS[1] batch meta hash. ARGV[1] the mark: the batch's finished count over all epochs.
-- Returns 1 if the mark was set, 0 if the batch has no record.
if redis.call('HEXISTS', KEYS[1], 'skillbook') == 0 then
    return 0
end
redis.call('HSET', KEYS[1], 'quiet_until', ARGV[1])
return 1
