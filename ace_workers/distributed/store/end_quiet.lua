-- End a batch's quiet finishes (quiet_finishes.lua): every finish from now on is told to admission,
-- and the caller tells admission the count the quiet ones reached, read in the same step so that
-- none falls between (a tenant's batch opened beside this one is owed the slots they freed).
--
-- KEYS[1] batch meta hash.
-- Returns {the batch's epoch, that epoch's finished count} if a mark was set, else false.
if redis.call('HDEL', KEYS[1], 'quiet_until') == 0 then
    return false
end
local epoch = redis.call('HGET', KEYS[1], 'epoch') or '1'
return {epoch, redis.call('HGET', KEYS[1], 'finished:e' .. epoch) or '0'}
