-- ARGV: display hashes whose base rows step down.
for _, d in ipairs(ARGV) do demote(d) end
return 0
