-- A fan-out's timeline entries for the users of one node, in one call (tl_cap.lua's cap
-- after each mailbox's entries): each mailbox gets its event ids (ZADD NX, score = id); one
-- over the cap ARGV[1] loses its oldest entries, and its floor (:tlf) rises to the newest
-- of them. Each user's keys stay in that user's slot.
-- ARGV (after users_of's): cap, then per user its event ids joined by commas.
local users, A = users_of()
local cap = tonumber(A[1])
for j = 1, #users do
  local tl = users[j] .. ':tl'
  local pairs_ = {}
  for id in string.gmatch(A[1 + j], '[^,]+') do
    pairs_[#pairs_ + 1] = id
    pairs_[#pairs_ + 1] = id
  end
  for k = 1, #pairs_, 1000 do  -- unpack's stack holds some thousands of values
    redis.call('ZADD', tl, 'NX', unpack(pairs_, k, math.min(k + 999, #pairs_)))
  end
  local n = redis.call('ZCARD', tl)
  if n > cap then
    local newest_gone = redis.call('ZRANGE', tl, n - cap - 1, n - cap - 1)[1]
    redis.call('ZREMRANGEBYRANK', tl, 0, n - cap - 1)
    local floor = tonumber(redis.call('GET', users[j] .. ':tlf') or '0')
    if tonumber(newest_gone) > floor then redis.call('SET', users[j] .. ':tlf', newest_gone) end
  end
end
return #users
