-- Deliver one event to one user: skip a (user, event) already stored (reporting it as
-- written when the same writer wrote it: a retried job), else join the newest group of the
-- bundle while it is unread under the user's watermarks, or start a group of its own
-- (tidings.domain.bundling.join_or_start): a live notification is dated no earlier than just
-- after the bundle's newest base; a back-filled one keeps its date and only looks at the
-- newest base older than itself, so it never takes a newer group over.
-- ARGV: id, created, type, category, section, actor, object, bundle, bundled (1|0), writer,
--       own display hash, backfill (1|0)
local id, writer = ARGV[1], ARGV[10]
if redis.call('EXISTS', nkey(id)) == 1 then
  if writer ~= '' and redis.call('HGET', nkey(id), 'w') == writer then return 1 end
  return 0
end
local group, created = ARGV[11], tonumber(ARGV[2])
if ARGV[9] == '1' then
  local base = newest_base(ARGV[8], ARGV[12] == '1' and created or nil, tonumber(id))
  if base then
    if ARGV[12] ~= '1' then created = math.max(created, tonumber(base.c) + 1) end
    if is_unread(markers_of(redis.call('HGETALL', P .. ':m')), base) then
      group = base.d
      demote(group)
    end
  end
end
insert(id, string.format('%.0f', created), ARGV[3], ARGV[4], ARGV[5], opt(ARGV[6]), opt(ARGV[7]), ARGV[8],
  group, writer)
return 1
