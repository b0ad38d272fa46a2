-- Base rows newest first by (created, id), strictly before the cursor, matching the query:
-- Jiepang's server-side list by (user, types) with field conditions, limit, max_id, since_id.
-- ARGV[1]: JSON {types, category, section, unread, actor, object, max_id, since_id, all,
--                scoped, limit, before_c, before_id}
local q = query_of(ARGV[1])
local key = P .. ':base'
local start = 0
if q.before_c then
  local m = enc(q.before_id)
  local score = redis.call('ZSCORE', key, m)
  local rank = redis.call('ZREVRANK', key, m)
  if rank and score and tonumber(score) == tonumber(q.before_c) then
    start = rank + 1
  else
    start = redis.call('ZCOUNT', key, '(' .. q.before_c, '+inf')
    local bid = tonumber(q.before_id)
    for _, same in ipairs(redis.call('ZRANGEBYSCORE', key, q.before_c, q.before_c)) do
      if tonumber(dec(same)) >= bid then start = start + 1 end
    end
  end
end
-- the first batch is the page itself (what an unfiltered page needs), then larger ones
local out, found, batch = {}, 0, math.max(q.limit, 8)
while found < q.limit do
  local members = redis.call('ZREVRANGE', key, start, start + batch - 1)
  if #members == 0 then break end
  for _, m in ipairs(members) do
    local h = load(dec(m))
    if h and matches(q, h) then
      table.insert(out, row(h))
      found = found + 1
      if found >= q.limit then break end
    end
  end
  start = start + batch
  batch = math.min(batch * 2, 128)
end
return out
