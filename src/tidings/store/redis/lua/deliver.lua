-- Deliver one event to one user: skip a (user, event) already stored (reporting it as
-- written when the same writer wrote it: a retried job), else join the newest group of the
-- bundle while it is unread under the user's watermarks, or start a group of its own
-- (tidings.domain.bundling.join_or_start).
-- ARGV: id, created, type, category, section, actor, object, bundle, bundled (1|0), writer,
--       own display hash
local id, writer = ARGV[1], ARGV[10]
if redis.call('EXISTS', nkey(id)) == 1 then
  if writer ~= '' and redis.call('HGET', nkey(id), 'w') == writer then return 1 end
  return 0
end
local group = ARGV[11]
if ARGV[9] == '1' then
  local newest = redis.call('ZREVRANGE', P .. ':bb:' .. ARGV[8], 0, 0)
  if #newest > 0 then
    local base = load(dec(newest[1]))
    if base and is_unread(markers_of(redis.call('HGETALL', P .. ':m')), base) then
      group = base.d
      demote(group)
    end
  end
end
insert(id, ARGV[2], ARGV[3], ARGV[4], ARGV[5], opt(ARGV[6]), opt(ARGV[7]), ARGV[8], group, writer)
return 1
