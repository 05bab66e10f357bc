-- A function the step scripts share (prepended to record_step.lua and finish_sample.lua): count one
-- finished run of step INDEX of a sample in the batch's steps hash, once. The stepped hash holds, per
-- sample, how many of its steps finished; a chain runs a sample's steps in order, so a run of a step
-- the sample is past already (a redelivery, a copy the reconciler sent again) is not counted twice.
--
-- steps, stepped: the keys; sample: its key; index: the step's index (a string); name: its name;
-- seconds, prompt, completion: numbers as strings; cost: USD as a string, or '' where nothing was priced.
-- Returns true if the run was counted.
local function count_step(steps, stepped, sample, index, name, seconds, prompt, completion, cost)
    local step = tonumber(index)
    if tonumber(redis.call('HGET', stepped, sample) or 0) > step then
        return false
    end
    redis.call('HSET', stepped, sample, step + 1)
    redis.call('HSET', steps, index .. ':name', name)
    redis.call('HINCRBY', steps, index .. ':done', 1)
    redis.call('HINCRBYFLOAT', steps, index .. ':seconds', seconds)
    if tonumber(prompt) > 0 then
        redis.call('HINCRBY', steps, index .. ':prompt_tokens', prompt)
    end
    if tonumber(completion) > 0 then
        redis.call('HINCRBY', steps, index .. ':completion_tokens', completion)
    end
    if cost ~= '' then
        redis.call('HINCRBYFLOAT', steps, index .. ':cost', cost)
    end
    return true
end
