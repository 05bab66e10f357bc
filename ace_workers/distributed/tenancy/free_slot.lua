-- free_slot(batch, epoch, finished, change, sample): a sample of a batch left flight (finished,
-- failed, or parked waiting for budget), or a parked one came back. A finish is given as its epoch's finished count from the batch's finish script: the
-- batch's samples finished over all epochs are then (epoch - 1) x per_epoch + that count, since an
-- epoch starts only once the one before it finished. The batch keeps the highest such count, so a
-- finish told twice, told late, or never told (the next finish, or the reconciler's count from the
-- batch record, covers it) frees its slot exactly once. A parked sample named by its key is counted
-- once however often it is told (parked twice, released twice); one named by no key, as told.
--
-- KEYS as in admission_state.lua. `epoch`: '' for no finish; `finished`: the epoch's finished
-- count; `change`: of the parked count (1 parked, -1 released, 0); `sample`: the parked sample's key ('').
-- Returns the batch's samples in flight after it, or -1 for a batch admission does not know.
local function free_slot(batch, epoch, finished, change_by, sample)
    if redis.call('HEXISTS', KEYS[1], batch) == 0 then
        return -1
    end
    if epoch ~= '' then
        local per_epoch = num(redis.call('HGET', KEYS[7], batch))
        local all_finished = (math.max(1, num(epoch)) - 1) * per_epoch + num(finished)
        if all_finished > num(redis.call('HGET', KEYS[3], batch)) then
            redis.call('HSET', KEYS[3], batch, all_finished)
        end
    end
    local change = num(change_by)
    if change ~= 0 and sample ~= '' then
        local field = parked_field(batch, sample)
        if change > 0 then
            if redis.call('HSETNX', KEYS[10], field, 1) == 0 then
                change = 0
            end
        elseif redis.call('HDEL', KEYS[10], field) == 0 then
            change = 0
        end
    end
    if change ~= 0 then
        local parked = math.max(0, num(redis.call('HGET', KEYS[4], batch)) + change)
        if parked == 0 then
            redis.call('HDEL', KEYS[4], batch)
        else
            redis.call('HSET', KEYS[4], batch, parked)
        end
    end
    return flying(
        redis.call('HGET', KEYS[2], batch), redis.call('HGET', KEYS[3], batch), redis.call('HGET', KEYS[4], batch)
    )
end
