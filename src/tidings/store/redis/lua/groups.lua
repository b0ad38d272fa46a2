-- Per display group: member count (up to the scan) and its newest distinct actors.
-- ARGV: scan, then display hashes. Returns {count, actor, actor, ...} per group.
local scan = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  local members = redis.call('ZREVRANGE', P .. ':g:' .. ARGV[i], 0, scan - 1)
  local info, seen = {#members}, {}
  for _, m in ipairs(members) do
    local a = redis.call('HGET', nkey(dec(m)), 'a')
    if a and not seen[a] then
      seen[a] = true
      table.insert(info, a)
    end
  end
  table.insert(out, info)
end
return out
