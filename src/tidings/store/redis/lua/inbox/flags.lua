-- Set and clear bits of the flags (x) of every member of these display groups
-- (InboxStore.set_flags): a base row leaves :unread while archived or snoozed and comes back
-- to it (unless read) when neither; a saved row is in :saved. With SNOOZED (128) set, z is the
-- group's time to return; with it cleared, z goes.
-- ARGV: on, off, until ('' for none), display hashes.
local on, off, back = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local SNOOZED = 128
for i = 4, #ARGV do
  for _, m in ipairs(members_of(ARGV[i])) do
    local id = dec(m)
    local h = load(id)
    if h then
      local x = bit.band(bit.bor(flags_of(h), on), bit.bnot(off))
      if x == 0 then redis.call('HDEL', nkey(id), 'x') else redis.call('HSET', nkey(id), 'x', x) end
      if bit.band(on, SNOOZED) ~= 0 and back ~= '' then
        redis.call('HSET', nkey(id), 'z', back)
      elseif bit.band(off, SNOOZED) ~= 0 then
        redis.call('HDEL', nkey(id), 'z')
      end
      if bit.band(x, SAVED) ~= 0 then
        redis.call('ZADD', P .. ':saved', h.c, m)
      else
        redis.call('ZREM', P .. ':saved', m)
      end
      if h.base == '1' then
        if bit.band(x, HIDDEN) ~= 0 or h.r then
          redis.call('ZREM', P .. ':unread', m)
        else
          redis.call('ZADD', P .. ':unread', h.f, m)
        end
      end
    end
  end
end
return 0
