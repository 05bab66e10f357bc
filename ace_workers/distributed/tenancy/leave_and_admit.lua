-- A sample of a batch finished (free_slot.lua), and the free slots are granted (grant_slots.lua), in
-- one round trip: what each finishing sample does.
--
-- Then how far the batch's next finishes may go untold (quiet_until): while its tenant is the only
-- one with work, a finish changes no grant until `least` slots are free (and none at all once no
-- batch waits for a slot), so the finishes before the one that frees them can go untold. The
-- batch's finish script counts them (its finished count is atomic, whichever worker process
-- finishes which sample) and tells the first one past the mark. Never more than the batch has in
-- flight less one: its last sample in flight is always told, so a batch whose finishes stop short
-- of its mark (another batch of the tenant freed the rest) still tells one, an epoch's last finish
-- is told (it opens the next), and so is a batch's last. The batch is kept in KEYS[11] with its
-- mark, so that a batch opening (of any tenant) has admission told what the untold finishes freed
-- before it grants (worker/admission.py).
--
-- KEYS as in admission_state.lua.
-- ARGV[1] batch id, ARGV[2] epoch, ARGV[3] the epoch's finished count, ARGV[4] the window,
-- ARGV[5] JSON {tenant: [weight, cap (0: none)]}, ARGV[6] the most grants, ARGV[7] the fewest free
-- slots worth granting.
-- Returns the batch's samples in flight after the finish (-1 for a batch admission does not know),
-- the batch's finished count (over all epochs) up to which its finishes may go untold (0: tell
-- every one), then the grants as admit.lua returns them.
local function quiet_until(batch, after, window, least)
    local tenant = after.tenant_of[batch]
    if tenant == nil then
        return 0
    end
    local anyone_waits = false
    for other, owner in pairs(after.tenant_of) do
        local waits = num(after.admitted[other]) < num(after.limit[other])
        if owner ~= tenant and (after.flying[other] > 0 or waits) then
            return 0 -- another tenant has work: any finish may owe it a slot
        end
        anyone_waits = anyone_waits or waits
    end
    local quiet = after.flying[batch] - 1
    if anyone_waits then
        quiet = math.min(quiet, least - (window - after.total) - 1)
    end
    if quiet <= 0 then
        return 0
    end
    return num(redis.call('HGET', KEYS[3], batch)) + quiet
end

local batch, window, least = ARGV[1], num(ARGV[4]), num(ARGV[7])
local flying_after = free_slot(batch, ARGV[2], ARGV[3], 0, '')
local out, after = grant_slots(window, ARGV[5], num(ARGV[6]), least)
local quiet = quiet_until(batch, after, window, least)
if quiet > 0 then
    redis.call('HSET', KEYS[11], batch, quiet)
else
    redis.call('HDEL', KEYS[11], batch)
end
table.insert(out, 1, flying_after)
table.insert(out, 2, quiet)
return out
