-- Raise a timeline mailbox's floor (:tlf, "created_at:id") to the position ARGV[1], ARGV[2],
-- never lower it.
raise_floor(P, tonumber(ARGV[1]), ARGV[2])
return 0
