-- The members of the display group holding notification ARGV[1], newest first by (created,
-- id), strictly before the place (ARGV[3], ARGV[4]) when ARGV[3] is not '', up to ARGV[2],
-- as json_rows; false when the user holds no notification of that event. A group that can
-- have no other member (:solo) is its one row.
local h = load(ARGV[1])
if not h then return false end
local limit = tonumber(ARGV[2])
local bc, bid = ARGV[3], ARGV[4]
local key = P .. ':g:' .. h.d
local ms
if redis.call('EXISTS', key) == 1 then
  local start = 0
  if bc ~= '' then  -- the rank of the first member below the place
    start = redis.call('ZCOUNT', key, '(' .. bc, '+inf')
    for _, same in ipairs(redis.call('ZRANGEBYSCORE', key, bc, bc)) do
      if tonumber(dec(same)) >= tonumber(bid) then start = start + 1 end
    end
  end
  ms = redis.call('ZREVRANGE', key, start, start + limit - 1)
else
  ms = {}
  local c = tonumber(h.c)
  if bc == '' or c < tonumber(bc) or (c == tonumber(bc) and tonumber(h.id) < tonumber(bid)) then
    ms = {enc(h.id)}
  end
end
local hs = {}
for _, m in ipairs(ms) do
  local row = load(dec(m))
  if row then table.insert(hs, row) end
end
return json_rows(hs)
