-- The unread count a badge asks (no condition but the watermarks), without common.lua: the
-- count of count.lua's plain path, ZCOUNT of :unread above the 'all' watermark (with unseen,
-- above the later of 'all' and 'seen'), up to the cap. A user with any other watermark
-- (scoped, read-up-to) gets -1: the caller asks count.lua, which knows them.
-- ARGV: cap, unseen (1|0)
local flat = redis.call('HGETALL', KEYS[1] .. ':m')
local all, seen = 0, 0
for i = 1, #flat, 2 do
  local scope = flat[i]
  if scope == 'all' then
    all = tonumber(flat[i + 1])
  elseif scope == 'seen' then
    seen = tonumber(flat[i + 1])
  else
    return -1
  end
end
if ARGV[2] == '1' then all = math.max(all, seen) end
return math.min(redis.call('ZCOUNT', KEYS[1] .. ':unread', '(' .. string.format('%.0f', all),
  '+inf'), tonumber(ARGV[1]))
