-- The stored rows of these event ids (absent ones left out). ARGV: ids.
local out = {}
for _, id in ipairs(ARGV) do
  local h = load(id)
  if h then table.insert(out, row(h)) end
end
return out
