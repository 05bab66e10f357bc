-- A sample of a batch left flight, or a parked one came back (free_slot.lua).
--
-- KEYS as in admission_state.lua.
-- ARGV[1] batch id, ARGV[2] epoch ('' for no finish), ARGV[3] the epoch's finished count,
-- ARGV[4] change of the parked count (1 parked, -1 released, 0), ARGV[5] the parked sample's key ('').
-- Returns the batch's samples in flight after it, or -1 for a batch admission does not know.
return free_slot(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
