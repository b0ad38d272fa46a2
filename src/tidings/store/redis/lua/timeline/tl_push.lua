-- A fan-out's timeline entries for the users of one node, in one call (tl_cap.lua's cap
-- after each mailbox's entries): each mailbox gets its entries (ZADD NX, score = the event's
-- created_at, member = enc(id)); one past the high-water mark ARGV[2] loses its oldest
-- entries beyond the newest ARGV[1] (the cap), and its floor (:tlf) rises to the newest of
-- them. Each user's keys stay in that user's slot.
-- ARGV (after users_of's): cap, mark, then per user its entries as "created_at:id" joined by
-- commas.
local users, A = users_of()
local cap, mark = tonumber(A[1]), tonumber(A[2])
for j = 1, #users do
  local tl = users[j] .. ':tl'
  local pairs_ = {}
  for at, id in string.gmatch(A[2 + j], '(%d+):(%d+)') do
    pairs_[#pairs_ + 1] = at
    pairs_[#pairs_ + 1] = enc(id)
  end
  for k = 1, #pairs_, 1000 do  -- unpack's stack holds some thousands of values
    redis.call('ZADD', tl, 'NX', unpack(pairs_, k, math.min(k + 999, #pairs_)))
  end
  cap_timeline(users[j], cap, mark)
end
return #users
