-- A timeline's page in one call, without common.lua. The mailbox (:tl) is in the timeline's
-- order: score = the event's created_at (microseconds, exact in a double), member = enc(id)
-- (the id's length as a letter, then the id: equal times sort by id). Its floor (:tlf) is a
-- position, "created_at:id" ('0:0' or none: complete from the start).
-- ARGV: before (created_at, id; '' '' for none), after (the same), limit, whether the
-- page stays above the floor too (1|0), and the cap ('' for none). Returns the floor, then
-- per entry strictly below before and above after (and the floor) its id and score, newest
-- first, at most limit. With a cap, only the newest cap entries count: the floor returned is
-- raised to the newest entry beyond them (a mailbox holds up to its high-water mark).
local tl = KEYS[1] .. ':tl'
local function enc(id) return string.char(96 + #id) .. id end
local floor = redis.call('GET', KEYS[1] .. ':tlf') or '0:0'
local fat, fid = string.match(floor, '^(%d+):(%d+)$')
if not fat then floor, fat, fid = '0:0', '0', '0' end
local low_at, low_m = -1, ''
local function raise(at, m)
  if at > low_at or (at == low_at and m > low_m) then low_at, low_m = at, m end
end
if ARGV[7] ~= '' then
  local k = redis.call('ZCARD', tl) - tonumber(ARGV[7])
  if k > 0 then
    local h = redis.call('ZRANGE', tl, k - 1, k - 1, 'WITHSCORES')
    local hat = tonumber(h[2])
    if hat > tonumber(fat) or (hat == tonumber(fat) and h[1] > enc(fid)) then
      fat, fid = string.format('%.0f', hat), string.sub(h[1], 2)
      floor = fat .. ':' .. fid
    end
    raise(hat, h[1])
  end
end
if ARGV[6] == '1' then raise(tonumber(fat), enc(fid)) end
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
local out = {floor}
for i = 1, #got, 2 do
  local at = tonumber(got[i + 1])
  if at < low_at or (at == low_at and got[i] <= low_m) then break end
  out[#out + 1] = string.sub(got[i], 2)
  out[#out + 1] = string.format('%.0f', at)
end
return out
