-- Per display group: member count (up to the scan) and its newest distinct actors.
-- ARGV: scan, then display hashes. Returns {count, actor, actor, ...} per group.
local scan = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  table.insert(out, group_of(ARGV[i], scan))
end
return out
