-- A timeline's head in one call, without common.lua: its floor (:tlf) and the ids of its
-- newest entries below ARGV[1] ('+inf' or '(<id>') and above the later of the floor and
-- ARGV[2] (0: no lower bound), at most ARGV[3] of them.
local floor = tonumber(redis.call('GET', KEYS[1] .. ':tlf') or '0')
local low = math.max(floor, tonumber(ARGV[2]))
local bottom = '-inf'
if low > 0 then bottom = '(' .. string.format('%.0f', low) end
return {floor, redis.call('ZREVRANGEBYSCORE', KEYS[1] .. ':tl', ARGV[1], bottom,
  'LIMIT', 0, tonumber(ARGV[3]))}
