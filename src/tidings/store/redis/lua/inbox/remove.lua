-- Delete notifications; a group that loses its base gets its newest remaining member as
-- base. ARGV: ids. Returns rows deleted.
local removed = 0
for _, id in ipairs(ARGV) do
  local h = load(id)
  if h then
    local m, was_base = enc(id), h.base == '1'
    if was_base then set_base(h, false) end
    redis.call('DEL', nkey(id))
    redis.call('ZREM', P .. ':ids', m)
    redis.call('ZREM', P .. ':saved', m)
    redis.call('ZREM', P .. ':g:' .. h.d, m)
    if redis.call('HGET', P .. ':solo', h.d) == id then redis.call('HDEL', P .. ':solo', h.d) end
    removed = removed + 1
    if was_base then
      local newest = redis.call('ZREVRANGE', P .. ':g:' .. h.d, 0, 0)
      if #newest > 0 then
        local n = load(dec(newest[1]))
        if n and n.base ~= '1' then set_base(n, true) end
      end
    end
  end
end
return removed
