-- Delete notifications; a group that loses its base gets its newest remaining member as
-- base. ARGV: ids. Returns rows deleted.
local removed = 0
for _, id in ipairs(ARGV) do
  if remove_row(id) then removed = removed + 1 end
end
return removed
