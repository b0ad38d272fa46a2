-- How many of these groups' base rows InboxStore.set_flags would change, and the times to
-- return of those snoozed: {changed, display, until, display, until, ...}.
-- ARGV: on, off, display hashes.
local on, off = tonumber(ARGV[1]), tonumber(ARGV[2])
local changed, out = 0, {}
for i = 3, #ARGV do
  local d = ARGV[i]
  for _, id in ipairs(bases_of(d)) do
    local h = load(id)
    if h and bit.band(bit.bor(flags_of(h), on), bit.bnot(off)) ~= flags_of(h) then
      changed = changed + 1
    end
  end
  for _, m in ipairs(members_of(d)) do
    local z = redis.call('HGET', nkey(dec(m)), 'z')
    if z then
      table.insert(out, d)
      table.insert(out, z)
      break
    end
  end
end
table.insert(out, 1, changed)
return out
