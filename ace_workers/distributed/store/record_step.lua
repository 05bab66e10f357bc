-- Count a finished step of a sample that has more steps to run (count_step.lua is prepended; the
-- last step is counted by finish_sample.lua, in the round trip that records the sample). Nothing is
-- written for a batch with no record, a cancelled one or a finished one: their keys expire or have
-- expired, and a key written now would never expire.
--
-- KEYS[1] batch meta hash, KEYS[2] steps hash, KEYS[3] stepped hash
-- ARGV[1] sample key, ARGV[2] step index, ARGV[3] step name, ARGV[4] seconds, ARGV[5] prompt tokens,
-- ARGV[6] completion tokens, ARGV[7] cost in USD ('' when not priced)
-- Returns 1 if the run was counted, 0 if not (counted already, or the batch is cancelled or finished),
-- -2 if the batch has no record.
if redis.call('HEXISTS', KEYS[1], 'skillbook') == 0 then
    return -2
end
if redis.call('HEXISTS', KEYS[1], 'cancelled') == 1 or redis.call('HEXISTS', KEYS[1], 'finished_at') == 1 then
    return 0
end
if count_step(KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]) then
    return 1
end
return 0
