-- What the admission scripts share (prepended to each): the keys, in the order every script takes
-- them, and how many samples a batch has in flight. All keys carry the {admission} hash tag.
--
-- KEYS[1] tenant hash (batch -> its tenant), KEYS[2] admitted hash (batch -> samples admitted so
-- far, counted over all its epochs), KEYS[3] left hash (batch -> samples finished, over all
-- epochs), KEYS[4] parked hash (batch -> samples waiting for budget), KEYS[5] limit hash (batch ->
-- how many of its samples may be admitted by now: the end of its open epoch), KEYS[6] cap hash
-- (batch -> most of its samples in flight), KEYS[7] per_epoch hash, KEYS[8] ready zset (batches
-- with samples left to admit, scored in the order they came), KEYS[9] the sequence of that order,
-- KEYS[10] parked samples hash ("batch<US>sample" -> 1: each parked sample counted once), KEYS[11]
-- quiet hash (batch -> its quiet_until: its finishes up to that count may go untold; see
-- leave_and_admit.lua).
-- Numbers read back are untrusted: what is not a number counts as 0.
local function num(value)
    return tonumber(value) or 0
end

-- A hash as a Lua table of numbers.
local function numbers(key)
    local flat = redis.call('HGETALL', key)
    local out = {}
    for i = 1, #flat, 2 do
        out[flat[i]] = num(flat[i + 1])
    end
    return out
end

-- Samples of a batch sent (or to be sent) and not finished nor parked.
local function flying(admitted, left, parked)
    return math.max(0, num(admitted) - num(left) - num(parked))
end

-- The field of one parked sample of a batch in KEYS[10].
local function parked_field(batch, sample)
    return batch .. '\031' .. sample
end
