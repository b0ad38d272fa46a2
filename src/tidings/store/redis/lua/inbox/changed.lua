-- How many of these groups' base rows would change state if marked read (or unread).
-- ARGV: JSON markers {all, scoped}, read (1|0), display hashes.
local q = query_of(ARGV[1])
local read = ARGV[2] == '1'
local changed = 0
for i = 3, #ARGV do
  for _, id in ipairs(bases_of(ARGV[i])) do
    local h = load(id)
    if h and is_unread(q.mk, h) == read then changed = changed + 1 end
  end
end
return changed
