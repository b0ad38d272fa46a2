-- Read up to a place: set the 'position' watermark (until) and its place if the place moves
-- forward (or there is none). ARGV: until, created, id. Returns 1 if set.
local current = redis.call('HGET', P .. ':m', 'position_place')
local c, id = tonumber(ARGV[2]), tonumber(ARGV[3])
if current then
  local cc, cid = string.match(current, '^(%d+):(%d+)$')
  cc, cid = tonumber(cc), tonumber(cid)
  if c < cc or (c == cc and id < cid) then return 0 end
end
redis.call('HSET', P .. ':m', 'position', ARGV[1], 'position_place', ARGV[2] .. ':' .. ARGV[3])
return 1
