-- A sample of a batch finished (free_slot.lua), and the free slots are granted (grant_slots.lua), in
-- one round trip: what each finishing sample does.
--
-- KEYS as in admission_state.lua.
-- ARGV[1] batch id, ARGV[2] epoch, ARGV[3] the epoch's finished count, ARGV[4] the window,
-- ARGV[5] JSON {tenant: [weight, cap (0: none)]}, ARGV[6] the most grants, ARGV[7] the fewest free
-- slots worth granting.
-- Returns the batch's samples in flight after the finish (-1 for a batch admission does not know),
-- then the grants as admit.lua returns them.
local flying_after = free_slot(ARGV[1], ARGV[2], ARGV[3], 0, '')
local out = grant_slots(num(ARGV[4]), ARGV[5], num(ARGV[6]), num(ARGV[7]))
table.insert(out, 1, flying_after)
return out
