-- A timeline's page in one call, without common.lua. The mailbox (:tl) is in the timeline's
-- order: score = the event's created_at (microseconds, exact in a double), member = enc(id)
-- (the id's length as a letter, then the id: equal times sort by id). Its floor (:tlf) is a
-- position, "created_at:id" ('0:0' or none: complete from the start).
-- ARGV: before (created_at, id; '' '' for none), after (the same), limit, and whether the
-- page stays above the floor too (1|0). Returns the floor, then per entry strictly below
-- before and above after (and the floor) its id and score, newest first, at most limit.
local tl = KEYS[1] .. ':tl'
local function enc(id) return string.char(96 + #id) .. id end
local floor = redis.call('GET', KEYS[1] .. ':tlf') or '0:0'
local fat, fid = string.match(floor, '^(%d+):(%d+)$')
local low_at, low_m = -1, ''
local function raise(at, m)
  if at > low_at or (at == low_at and m > low_m) then low_at, low_m = at, m end
end
if ARGV[6] == '1' and fat then raise(tonumber(fat), enc(fid)) end
if ARGV[3] ~= '' then raise(tonumber(ARGV[3]), enc(ARGV[4])) end
local start = 0
if ARGV[1] ~= '' then
  -- the entries above before: those of a later time, then those of its time and a higher id
  local at, m = tonumber(ARGV[1]), enc(ARGV[2])
  start = redis.call('ZCOUNT', tl, '(' .. ARGV[1], '+inf')
  while true do
    local e = redis.call('ZREVRANGE', tl, start, start, 'WITHSCORES')
    if #e == 0 or tonumber(e[2]) ~= at or e[1] < m then break end
    start = start + 1
  end
end
local n = tonumber(ARGV[5])
local got = redis.call('ZREVRANGE', tl, start, start + n - 1, 'WITHSCORES')
local out = {fat and floor or '0:0'}
for i = 1, #got, 2 do
  local at = tonumber(got[i + 1])
  if at < low_at or (at == low_at and got[i] <= low_m) then break end
  out[#out + 1] = string.sub(got[i], 2)
  out[#out + 1] = string.format('%.0f', at)
end
return out
