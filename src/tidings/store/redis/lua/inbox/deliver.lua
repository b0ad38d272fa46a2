-- Deliver one event to each user of KEYS (users of one node; one call per node and event):
-- skip a (user, event) already stored (reporting it as written when the same writer wrote it:
-- a retried job), else join the newest group of the bundle while it is unread under the
-- user's watermarks, or start a group of its own (tidings.domain.bundling.join_or_start): a
-- live notification is dated no earlier than just after the bundle's newest base; a
-- back-filled one keeps its date and only looks at the newest base older than itself, so it
-- never takes a newer group over. Each user's keys stay in that user's slot. The row's fields
-- are built once for the event: only a bundled row's date and group differ from user to user.
-- A row is dated at the event's own time (created), fresh from its delivery (never before its
-- date): read state compares the fresh time to the watermarks.
-- ARGV: id, created, type, category, section, actor, object, bundle, bundled (1|0), writer,
--       own display hash, backfill (1|0), queryable fields (JSON object, or ''), delivered,
--       then each user's first flags (why it reached them), in the users' order; a row that
--       joins a group takes the more personal reason of its own and the base's (the group's)
-- Returns per user 1 (written, or written before by the same writer) or 0.
local users, A = users_of()
local id, writer = A[1], A[10]
local backfill, bundled = A[12] == '1', A[9] == '1'
local m, created0 = enc(id), tonumber(A[2])
local c0, delivered = string.format('%.0f', created0), tonumber(A[14])
local fields = row_fields(c0, A[3], A[4], A[5], opt(A[6]), opt(A[7]), A[8], A[11], writer,
  A[13], '0')
fields[4] = string.format('%.0f', math.max(created0, delivered))
local out = {}
for j = 1, #users do
  P = users[j]
  local key = nkey(id)
  if redis.call('EXISTS', key) == 1 then
    out[j] = (writer ~= '' and redis.call('HGET', key, 'w') == writer) and 1 or 0
  else
    local c, group = c0, A[11]
    local x = A[14 + j] or '0'
    if bundled then
      local created = created0
      local base = newest_base(A[8], backfill and created or nil, tonumber(id))
      if base then
        if not backfill then created = math.max(created, tonumber(base.c) + 1) end
        if is_unread(markers_of(redis.call('HGETALL', P .. ':m')), base) then
          group = base.d
          -- the most personal reason of the group; a saved group stays saved
          x = string.format('%d', bit.bor(more_personal(x, base.x),
            bit.band(tonumber(base.x or 0) or 0, SAVED)))
          demote(group, base)
        end
      end
      c = string.format('%.0f', created)
      fields[2], fields[4], fields[14] = c, string.format('%.0f', math.max(created, delivered)),
        group
    end
    fields[20] = x
    store_row(id, m, c, A[8], group, fields, not bundled)
    if bit.band(tonumber(x) or 0, SAVED) ~= 0 then redis.call('ZADD', P .. ':saved', c, m) end
    out[j] = 1
  end
end
return out
