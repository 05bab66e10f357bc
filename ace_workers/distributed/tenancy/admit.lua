-- Grant admission slots (grant_slots.lua).
--
-- KEYS as in admission_state.lua.
-- ARGV[1] the window, ARGV[2] JSON {tenant: [weight, cap (0: none)]}, ARGV[3] the most grants to make
-- in this call, ARGV[4] the fewest free slots worth granting.
-- Returns a flat list: batch id, its admitted count after the grants, for each batch granted any.
local grants = grant_slots(num(ARGV[1]), ARGV[2], num(ARGV[3]), num(ARGV[4]))
return grants
