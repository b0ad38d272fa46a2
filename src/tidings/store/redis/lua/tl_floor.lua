-- Raise a timeline mailbox's floor (:tlf) to ARGV[1], never lower it.
local floor = tonumber(redis.call('GET', P .. ':tlf') or '0')
if tonumber(ARGV[1]) > floor then redis.call('SET', P .. ':tlf', ARGV[1]) end
return 0
