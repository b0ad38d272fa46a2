-- The newest base row of a bundle (a list of one row, or none); with a place (created, id),
-- the newest one strictly before it. ARGV: bundle hash[, created, id].
local h = newest_base(ARGV[1], ARGV[2] and tonumber(ARGV[2]) or nil, tonumber(ARGV[3] or '0'))
if not h then return {} end
return {row(h)}
