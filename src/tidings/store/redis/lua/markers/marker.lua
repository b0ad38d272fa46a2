-- Move a watermark forward (never back). ARGV: scope, until.
local current = redis.call('HGET', P .. ':m', ARGV[1])
if not current or tonumber(current) < tonumber(ARGV[2]) then
  redis.call('HSET', P .. ':m', ARGV[1], ARGV[2])
end
return 0
