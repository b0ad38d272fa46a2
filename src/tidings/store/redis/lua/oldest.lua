-- Ids of the oldest notifications (by event id) beyond the cap, at most ARGV[2] of them.
-- ARGV: cap, batch.
local extra = redis.call('ZCARD', P .. ':ids') - tonumber(ARGV[1])
if extra <= 0 then return {} end
local out = {}
for _, m in ipairs(redis.call('ZRANGE', P .. ':ids', 0, math.min(extra, tonumber(ARGV[2])) - 1)) do
  table.insert(out, dec(m))
end
return out
