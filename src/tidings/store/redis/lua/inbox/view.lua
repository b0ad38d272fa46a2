-- A page view in one call (InboxStore.page_view): the user's watermarks, the page under them
-- (page.lua) and the group info (groups.lua) of the listed rows whose type is in q.gtypes
-- (the types the caller knows to bundle; it asks groups.lua for any other that does).
-- ARGV[1]: JSON query as page.lua (its watermarks are read here), plus scan and gtypes.
-- Returns {watermarks as HGETALL gives them, the rows as JSON (json_rows), {display, count,
-- actor, ...} per row of a type in gtypes}.
local q = query_of(ARGV[1])
local marks = redis.call('HGETALL', P .. ':m')
q.mk = markers_of(marks)
local rows = page_rows(q)
local groups = {}
if q.gtypes then
  local wanted, done = {}, {}
  for _, t in ipairs(q.gtypes) do wanted[t] = true end
  for _, h in ipairs(rows) do
    local d = h.d
    if wanted[h.t] and not done[d] then
      done[d] = true
      local info = group_of(d, q.scan)
      table.insert(info, 1, d)
      table.insert(groups, info)
    end
  end
end
return {marks, json_rows(rows), groups}
