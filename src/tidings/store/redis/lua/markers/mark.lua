-- Mark every member of these groups read (read_at = now) or unread again (no read mark,
-- fresh from now). ARGV: read (1|0), now, display hashes.
local read, now = ARGV[1] == '1', ARGV[2]
for i = 3, #ARGV do
  for _, m in ipairs(members_of(ARGV[i])) do
    local id = dec(m)
    local base = redis.call('HGET', nkey(id), 'base') == '1'
    if read then
      redis.call('HSET', nkey(id), 'r', now)
      if base then redis.call('ZREM', P .. ':unread', m) end
    else
      redis.call('HDEL', nkey(id), 'r')
      redis.call('HSET', nkey(id), 'f', now)
      if base and bit.band(tonumber(redis.call('HGET', nkey(id), 'x') or 0) or 0, HIDDEN) == 0
      then
        redis.call('ZADD', P .. ':unread', now, m)
      end
    end
  end
end
return 0
