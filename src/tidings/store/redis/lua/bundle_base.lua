-- The newest base row of a bundle (a list of one row, or none). ARGV: bundle hash.
local newest = redis.call('ZREVRANGE', P .. ':bb:' .. ARGV[1], 0, 0)
if #newest == 0 then return {} end
local h = load(dec(newest[1]))
if not h then return {} end
return {row(h)}
