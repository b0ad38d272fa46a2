-- Unread base rows matching the query, counted up to the cap. Without conditions it is one
-- ZCOUNT of the unread index above the 'all' watermark; with them, a walk down that index
-- (newest first) that stops at the cap or at the watermark.
-- ARGV[1]: JSON query as page.lua (its unread is ignored), plus cap and all_s (the 'all'
--          watermark as text); or, with own_markers (and unseen), the watermarks are read here
local q = query_of(ARGV[1])
q.unread = nil
if q.own_markers then  -- the user's watermarks read here (one round trip for the count)
  q.mk = markers_of(redis.call('HGETALL', P .. ':m'))
  if q.unseen then  -- tidings.domain.readstate.Markers.unseen: seen counts as 'all read'
    q.mk = {all = math.max(q.mk.all, q.mk.seen or 0), scoped = q.mk.scoped}
  end
  q.all_s = string.format('%.0f', q.mk.all)
end
local key = P .. ':unread'
local plain = not (q.types or q.category or q.section or q.actor or q.object or q.max_id
  or q.since_id or q.fields or q.reasons or q.mk.pos) and #q.mk.scoped == 0
if plain then
  return math.min(redis.call('ZCOUNT', key, '(' .. q.all_s, '+inf'), q.cap)
end
local count, start, batch = 0, 0, 128
while true do
  local entries = redis.call('ZREVRANGE', key, start, start + batch - 1, 'WITHSCORES')
  if #entries == 0 then return count end
  for i = 1, #entries, 2 do
    if tonumber(entries[i + 1]) <= q.mk.all then return count end
    local h = load(dec(entries[i]))
    if h and matches(q, h) and is_unread(q.mk, h) then
      count = count + 1
      if count >= q.cap then return count end
    end
  end
  start = start + batch
end
