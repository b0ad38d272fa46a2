-- The oldest notifications by (created, id): ids and created of the first ARGV[1] of them.
local out = {}
for _, m in ipairs(redis.call('ZRANGE', P .. ':ids', 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')) do
  table.insert(out, m)
end
return out
