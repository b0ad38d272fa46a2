-- A timeline mailbox (:tl, zset of event ids, score = id) over its cap: remove the oldest
-- entries beyond the newest ARGV[1], raise the floor (:tlf) to the newest removed id.
local tl = P .. ':tl'
local cap = tonumber(ARGV[1])
local n = redis.call('ZCARD', tl)
if n <= cap then return 0 end
local newest_gone = redis.call('ZRANGE', tl, n - cap - 1, n - cap - 1)[1]
redis.call('ZREMRANGEBYRANK', tl, 0, n - cap - 1)
local floor = tonumber(redis.call('GET', P .. ':tlf') or '0')
if tonumber(newest_gone) > floor then redis.call('SET', P .. ':tlf', newest_gone) end
return n - cap
