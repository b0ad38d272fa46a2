-- A timeline mailbox (:tl, score = created_at, member = enc(id)) with more entries than the
-- high-water mark ARGV[2]: remove the oldest entries beyond the newest ARGV[1], raise the
-- floor (:tlf) to the newest removed.
return cap_timeline(P, tonumber(ARGV[1]), tonumber(ARGV[2]))
