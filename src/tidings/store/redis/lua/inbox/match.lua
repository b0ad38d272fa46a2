-- Rows whose actor, type and object equal the given ones (optional each): a walk over the
-- user's notifications, bounded by the per-user cap. ARGV: actor, type, object (opt-coded).
local actor, type_, object = opt(ARGV[1]), opt(ARGV[2]), opt(ARGV[3])
local out = {}
for _, m in ipairs(redis.call('ZRANGE', P .. ':ids', 0, -1)) do
  local v = redis.call('HMGET', nkey(dec(m)), 'a', 't', 'o')
  if (not actor or v[1] == actor) and (not type_ or v[2] == type_)
      and (not object or v[3] == object) then
    table.insert(out, row(load(dec(m))))
  end
end
return out
