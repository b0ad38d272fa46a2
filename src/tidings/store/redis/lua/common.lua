-- Shared by every script (prepended to each). KEYS[1] is the user's key prefix, e.g.
-- "tidings:{u:ann}": the hash tag puts every key of one user in one cluster slot, so each
-- script touches one slot and runs atomically. Keys under it:
--   :n:<id>        hash, one notification (c created, f fresh, r read at, t type, k category,
--                  s section, a actor, o object, b bundle hash, d display hash, base 1|0,
--                  w writer, x flags (tidings.domain.flags: why it arrived in bits 4-6,
--                  archived, saved, snoozed; absent: 0), z its group's time to return while
--                  snoozed, q:<name> each queryable payload field as text)
--   :ids           zset of every notification, score = created (trim order: the cap keeps the
--                  newest by (created, event id))
--   :base          zset of base rows, score = created, member = enc(id) (list order)
--   :unread        zset of base rows without a read mark in the inbox (neither archived nor
--                  snoozed), score = fresh
--   :saved         zset of saved rows (flags.SAVED), score = created (the cap spares them)
--   :g:<display>   zset of a display group's members, score = created
--   :gb:<display>  set of the group's base row ids (one, unless written out of order)
--   :bb:<bundle>   zset of the bundle's base rows, score = created
--   :solo          hash, display hash -> id, of the groups that can have no other member (a
--                  type that does not bundle): such a row has no :g:, :gb: or :bb: key
--   :m             hash of watermarks, scope -> until; 'position_place' holds the place
--                  ("created:id") of the read-up-to mark, whose until is under 'position'
-- Members are enc(id): the id's length as a letter, then the id, so that members of equal
-- score sort by event id.
local P = KEYS[1]
local FIELDS = {'c', 'f', 'r', 't', 'k', 's', 'a', 'o', 'b', 'd', 'base', 'w', 'x'}
local SAVED = 8  -- tidings.domain.flags.SAVED
local HIDDEN = 132  -- tidings.domain.flags.HIDDEN: archived or snoozed, out of the inbox
local FIELD_OF = {type = 't', category = 'k', section = 's'}

-- A many-user script (deliver, writers) declares its first user's prefix as KEYS[1] (the node
-- it runs on) and lists every user's prefix in ARGV: ARGV[1] = n, ARGV[2 .. n + 1] the
-- prefixes, then its own arguments (returned as A). A cluster refuses declared keys of several
-- slots; allow-cross-slot-keys lets the script reach the other users' slots of its node.
local function users_of()
  local n = tonumber(ARGV[1])
  local users, rest = {}, {}
  for j = 1, n do users[j] = ARGV[1 + j] end
  for i = n + 2, #ARGV do rest[#rest + 1] = ARGV[i] end
  return users, rest
end

local function nkey(id) return P .. ':n:' .. id end
local function enc(id) return string.char(96 + #id) .. id end
local function dec(m) return string.sub(m, 2) end
-- optional values travel as '' (none) or '=' .. value
local function opt(x) if x == '' then return false end return string.sub(x, 2) end

local function load(id)
  local v = redis.call('HMGET', nkey(id), unpack(FIELDS))
  if not v[1] then return nil end
  local h = {id = id}
  for i = 1, #FIELDS do h[FIELDS[i]] = v[i] end
  return h
end

-- A base row as a list reads it (page_rows): the fields it needs, without the writer, in one
-- table constructor; 'base' is known (a member of :base).
local LISTED = {'c', 'f', 'r', 't', 'k', 's', 'a', 'o', 'b', 'd', 'x'}
local function load_listed(id)
  local v = redis.call('HMGET', nkey(id), unpack(LISTED))
  if not v[1] then return nil end
  return {id = id, c = v[1], f = v[2], r = v[3], t = v[4], k = v[5], s = v[6], a = v[7],
    o = v[8], b = v[9], d = v[10], x = v[11], base = '1'}
end

-- (a nil field ends a Lua list: the optional ones travel as false, the flags as '0')
local function row(h)
  return {h.id, h.c, h.f, h.t, h.k, h.s, h.a or false, h.o or false, h.b, h.d, h.r or false,
    h.base, h.x or '0'}
end

-- The reason's bits of flags x (tidings.domain.flags.REASON_MASK), 0: none kept
local function reason_bits(x)
  return bit.band(tonumber(x or 0) or 0, 112)
end

-- flags with its reason the more personal of its own and other's (a smaller code; 0 gives way)
local function more_personal(flags, other)
  local mine, theirs = reason_bits(flags), reason_bits(other)
  if theirs ~= 0 and (mine == 0 or theirs < mine) then
    return bit.bor(bit.band(tonumber(flags), bit.bnot(112)), theirs)
  end
  return tonumber(flags)
end

-- A row's flags as a number, and whether they take it out of the inbox.
local function flags_of(h) return tonumber(h.x or 0) or 0 end
local function hidden(h) return bit.band(flags_of(h), HIDDEN) ~= 0 end

-- Rows (hashes) as one JSON array of row()s, absent fields as null: one reply string is
-- cheaper to send and to read than a nested reply of every field (page.lua, view.lua).
local function json_rows(hs)
  local N, parts = cjson.null, {}
  for i, h in ipairs(hs) do
    parts[i] = cjson.encode({h.id, h.c, h.f, h.t, h.k, h.s, h.a or N, h.o or N, h.b, h.d,
      h.r or N, h.base or N, h.x or N})
  end
  return '[' .. table.concat(parts, ',') .. ']'
end

local function set_base(h, on, stored, solo)
  local m = enc(h.id)
  if on then
    if not stored then redis.call('HSET', nkey(h.id), 'base', '1') end
    redis.call('ZADD', P .. ':base', h.c, m)
    if not solo then
      redis.call('ZADD', P .. ':bb:' .. h.b, h.c, m)
      redis.call('SADD', P .. ':gb:' .. h.d, h.id)
    end
    if not h.r and not hidden(h) then redis.call('ZADD', P .. ':unread', h.f, m) end
    h.base = '1'
  else
    redis.call('HSET', nkey(h.id), 'base', '0')
    redis.call('ZREM', P .. ':base', m)
    redis.call('ZREM', P .. ':bb:' .. h.b, m)
    redis.call('SREM', P .. ':gb:' .. h.d, h.id)
    redis.call('ZREM', P .. ':unread', m)
    h.base = '0'
  end
end

-- Delete one notification (true if it was there); a group that loses its base gets its newest
-- remaining member as base.
local function remove_row(id)
  local h = load(id)
  if not h then return false end
  local m, was_base = enc(id), h.base == '1'
  if was_base then set_base(h, false) end
  redis.call('DEL', nkey(id))
  redis.call('ZREM', P .. ':ids', m)
  redis.call('ZREM', P .. ':saved', m)
  redis.call('ZREM', P .. ':g:' .. h.d, m)
  if redis.call('HGET', P .. ':solo', h.d) == id then redis.call('HDEL', P .. ':solo', h.d) end
  if was_base then
    local newest = redis.call('ZREVRANGE', P .. ':g:' .. h.d, 0, 0)
    if #newest > 0 then
      local n = load(dec(newest[1]))
      if n and n.base ~= '1' then set_base(n, true) end
    end
  end
  return true
end

-- A new row's HSET arguments: c and f at 2 and 4 (f = c: deliver.lua sets a later delivery), d at 14 (deliver.lua sets them per user on
-- a table built once per event), then the optional actor, object and queryable fields (q: a
-- JSON object of texts, or '' for none).
local function row_fields(c, t, k, s, a, o, b, d, w, q, x)
  local fields = {'c', c, 'f', c, 't', t, 'k', k, 's', s, 'b', b, 'd', d, 'base', '1', 'w', w,
    'x', x or '0'}
  local n = 20
  if a then fields[n + 1] = 'a'; fields[n + 2] = a; n = n + 2 end
  if o then fields[n + 1] = 'o'; fields[n + 2] = o; n = n + 2 end
  if q and q ~= '' then
    for name, value in pairs(cjson.decode(q)) do
      fields[n + 1] = 'q:' .. name; fields[n + 2] = value; n = n + 2
    end
  end
  return fields
end

-- Write a row not stored yet (m = enc(id), fields of row_fields) as the unread base row of
-- group d: what set_base(h, true, true, solo) adds, without building h. solo: its type does
-- not bundle, so no other row will ever join its group or look for its bundle (the group is
-- named in :solo alone).
local function store_row(id, m, c, b, d, fields, solo)
  redis.call('HSET', nkey(id), unpack(fields))
  redis.call('ZADD', P .. ':ids', c, m)
  redis.call('ZADD', P .. ':base', c, m)
  redis.call('ZADD', P .. ':unread', fields[4], m)  -- its f
  if solo then
    redis.call('HSET', P .. ':solo', d, id)
  else
    redis.call('ZADD', P .. ':g:' .. d, c, m)
    redis.call('ZADD', P .. ':bb:' .. b, c, m)
    redis.call('SADD', P .. ':gb:' .. d, id)
  end
end

-- Store a notification as the base row of group d; a (user, event) already stored is skipped.
-- checked: the caller knows it is not stored yet.
local function insert(id, c, t, k, s, a, o, b, d, w, q, checked, solo, x)
  if not checked and redis.call('EXISTS', nkey(id)) == 1 then return 0 end
  store_row(id, enc(id), c, b, d, row_fields(c, t, k, s, a, o, b, d, w, q, x), solo)
  return 1
end

-- A display group's members (enc(id)), newest first, the first n (all without n): its :g:
-- set, or the one row :solo names.
local function members_of(d, n)
  local ms = redis.call('ZREVRANGE', P .. ':g:' .. d, 0, n and n - 1 or -1)
  if #ms == 0 then
    local id = redis.call('HGET', P .. ':solo', d)
    if id then ms = {enc(id)} end
  end
  return ms
end

-- The ids of a display group's base rows: its :gb: set, or the row :solo names while base.
local function bases_of(d)
  local ids = redis.call('SMEMBERS', P .. ':gb:' .. d)
  if #ids == 0 then
    local id = redis.call('HGET', P .. ':solo', d)
    if id and redis.call('HGET', nkey(id), 'base') == '1' then ids = {id} end
  end
  return ids
end

-- (created, id) of h at or below the place (created, id)
local function at_or_below(h, c, id)
  local hc = tonumber(h.c)
  return hc < c or (hc == c and tonumber(h.id) <= id)
end

-- The newest base row of bundle b, or with a place (c, id) the newest strictly before it.
local function newest_base(b, c, id)
  local key = P .. ':bb:' .. b
  if not c then
    local newest = redis.call('ZREVRANGE', key, 0, 0)
    if #newest == 0 then return nil end
    return load(dec(newest[1]))
  end
  -- members of equal score sort by event id: walk down from the place's score
  local start = 0
  while true do
    local ms = redis.call('ZREVRANGEBYSCORE', key, c, '-inf', 'LIMIT', start, 64)
    if #ms == 0 then return nil end
    for _, m in ipairs(ms) do
      local h = load(dec(m))
      if h and at_or_below(h, c, id) and not (tonumber(h.c) == c and tonumber(h.id) == id) then
        return h
      end
    end
    start = start + 64
  end
end

-- The group's base rows step down; known: one of them already loaded (deliver.lua's newest
-- base), not read again.
local function demote(d, known)
  for _, id in ipairs(bases_of(d)) do
    local h = (known and known.id == id) and known or load(id)
    if h then set_base(h, false) end
  end
end

-- Watermarks from scope/until pairs, as tidings.domain.readstate.Markers.from_rows reads them.
local function markers_of(flat)
  local mk = {all = 0, scoped = {}}
  local pos_until, place
  for i = 1, #flat, 2 do
    local scope = flat[i]
    if scope == 'all' then
      mk.all = tonumber(flat[i + 1])
    elseif scope == 'seen' then
      mk.seen = tonumber(flat[i + 1])
    elseif scope == 'position' then
      pos_until = tonumber(flat[i + 1])
    elseif scope == 'position_place' then
      place = flat[i + 1]
    else
      local kind, value = string.match(scope, '^(%a+):(.+)$')
      if kind and FIELD_OF[kind] then table.insert(mk.scoped, {kind, value, tonumber(flat[i + 1])}) end
    end
  end
  if pos_until and place then
    local c, id = string.match(place, '^(%d+):(%d+)$')
    mk.pos = {pos_until, tonumber(c), tonumber(id)}
  end
  return mk
end

-- tidings.domain.readstate.Markers.is_unread
local function is_unread(mk, h)
  if h.r then return false end
  local f = tonumber(h.f)
  if f <= mk.all then return false end
  if mk.pos and f <= mk.pos[1] and at_or_below(h, mk.pos[2], mk.pos[3]) then return false end
  for _, s in ipairs(mk.scoped) do
    if h[FIELD_OF[s[1]]] == s[2] and f <= s[3] then return false end
  end
  return true
end

-- A query (tidings.domain.views.Filters, JSON) as Lua values.
local function query_of(text)
  local q = cjson.decode(text)
  if q.types then
    local set = {}
    for _, t in ipairs(q.types) do set[t] = true end
    q.types = set
  end
  q.mk = {all = q.all or 0, scoped = q.scoped or {}, pos = q.position}
  return q
end

local function matches(q, h)
  if q.types and not q.types[h.t] then return false end
  if q.category and h.k ~= q.category then return false end
  if q.section and h.s ~= q.section then return false end
  if q.actor and h.a ~= q.actor then return false end
  if q.object and h.o ~= q.object then return false end
  local id = tonumber(h.id)
  if q.max_id and id >= q.max_id then return false end
  if q.since_id and id <= q.since_id then return false end
  if q.reasons then
    local code, found = reason_bits(h.x), false
    for _, r in ipairs(q.reasons) do if r == code then found = true end end
    if not found then return false end
  end
  if q.fields then  -- queryable payload fields: one HMGET of those asked for
    local names = {}
    for i, f in ipairs(q.fields) do names[i] = 'q:' .. f[1] end
    local got = redis.call('HMGET', nkey(h.id), unpack(names))
    for i, f in ipairs(q.fields) do
      if got[i] ~= f[2] then return false end
    end
  end
  if q.lacking and bit.band(flags_of(h), q.lacking) ~= 0 then return false end
  if q.having and bit.band(flags_of(h), q.having) ~= q.having then return false end
  if q.unread ~= nil and is_unread(q.mk, h) ~= q.unread then return false end
  return true
end

-- Base rows newest first by (created, id), strictly before the cursor (q.before_c,
-- q.before_id), matching the query, up to q.limit (page.lua, view.lua), as loaded hashes.
local function page_rows(q)
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
      local h = load_listed(dec(m))
      if h and matches(q, h) then
        table.insert(out, h)
        found = found + 1
        if found >= q.limit then break end
      end
    end
    start = start + batch
    batch = math.min(batch * 2, 128)
  end
  return out
end

-- A display group's member count (up to scan) and its newest distinct actors:
-- {count, actor, actor, ...} (groups.lua, view.lua).
-- {count, actor, ...}: the newest distinct actors, at most 100 (bundling.GROUP_ACTORS: enough
-- to tell "99+ others"), so a group of many actors stops reading its members there
local function group_of(d, scan)
  local members = members_of(d, scan)
  local info, seen = {#members}, {}
  for _, m in ipairs(members) do
    local a = redis.call('HGET', nkey(dec(m)), 'a')
    if a and not seen[a] then
      seen[a] = true
      table.insert(info, a)
      if #info > 100 then break end
    end
  end
  return info
end

-- A timeline mailbox (u .. ':tl', score = the event's created_at, member = enc(id)) has its
-- floor at u .. ':tlf', a position "created_at:id": raise it to (at, id), never lower it.
local function raise_floor(u, at, id)
  local floor = redis.call('GET', u .. ':tlf') or '0:0'
  local fat, fid = string.match(floor, '^(%d+):(%d+)$')
  fat, fid = tonumber(fat or 0), fid or '0'
  if at > fat or (at == fat and enc(id) > enc(fid)) then
    redis.call('SET', u .. ':tlf', string.format('%.0f', at) .. ':' .. id)
  end
end

-- A mailbox past its high-water mark (more than mark entries) keeps the newest cap (by rank:
-- time, then id), the floor raised to the newest removed; returns how many went.
local function cap_timeline(u, cap, mark)
  local tl = u .. ':tl'
  local n = redis.call('ZCARD', tl)
  if n <= mark then return 0 end
  local gone = redis.call('ZRANGE', tl, n - cap - 1, n - cap - 1, 'WITHSCORES')
  redis.call('ZREMRANGEBYRANK', tl, 0, n - cap - 1)
  raise_floor(u, tonumber(gone[2]), dec(gone[1]))
  return n - cap
end
