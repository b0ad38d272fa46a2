-- Shared by every script (prepended to each). KEYS[1] is the user's key prefix, e.g.
-- "tidings:{u:ann}": the hash tag puts every key of one user in one cluster slot, so each
-- script touches one slot and runs atomically. Keys under it:
--   :n:<id>        hash, one notification (c created, f fresh, r read at, t type, k category,
--                  s section, a actor, o object, b bundle hash, d display hash, base 1|0,
--                  w writer)
--   :ids           zset of every notification, score = event id (trim order)
--   :base          zset of base rows, score = created, member = enc(id) (list order)
--   :unread        zset of base rows without a read mark, score = fresh
--   :g:<display>   zset of a display group's members, score = created
--   :gb:<display>  set of the group's base row ids (one, unless written out of order)
--   :bb:<bundle>   zset of the bundle's base rows, score = created
--   :m             hash of watermarks, scope -> until
-- Members are enc(id): the id's length as a letter, then the id, so that members of equal
-- score sort by event id.
local P = KEYS[1]
local FIELDS = {'c', 'f', 'r', 't', 'k', 's', 'a', 'o', 'b', 'd', 'base', 'w'}
local FIELD_OF = {type = 't', category = 'k', section = 's'}

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

local function row(h)
  return {h.id, h.c, h.f, h.t, h.k, h.s, h.a, h.o, h.b, h.d, h.r, h.base}
end

local function set_base(h, on)
  local m = enc(h.id)
  if on then
    redis.call('HSET', nkey(h.id), 'base', '1')
    redis.call('ZADD', P .. ':base', h.c, m)
    redis.call('ZADD', P .. ':bb:' .. h.b, h.c, m)
    redis.call('SADD', P .. ':gb:' .. h.d, h.id)
    if not h.r then redis.call('ZADD', P .. ':unread', h.f, m) end
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

-- Store a notification as the base row of group d; a (user, event) already stored is skipped.
local function insert(id, c, t, k, s, a, o, b, d, w)
  if redis.call('EXISTS', nkey(id)) == 1 then return 0 end
  local fields = {'c', c, 'f', c, 't', t, 'k', k, 's', s, 'b', b, 'd', d, 'base', '1', 'w', w}
  if a then table.insert(fields, 'a'); table.insert(fields, a) end
  if o then table.insert(fields, 'o'); table.insert(fields, o) end
  redis.call('HSET', nkey(id), unpack(fields))
  local m = enc(id)
  redis.call('ZADD', P .. ':ids', id, m)
  redis.call('ZADD', P .. ':g:' .. d, c, m)
  set_base({id = id, c = c, f = c, r = false, b = b, d = d}, true)
  return 1
end

-- The group's base rows step down.
local function demote(d)
  for _, id in ipairs(redis.call('SMEMBERS', P .. ':gb:' .. d)) do
    local h = load(id)
    if h then set_base(h, false) end
  end
end

-- Watermarks from scope/until pairs, as tidings.domain.readstate.Markers.from_rows reads them.
local function markers_of(flat)
  local mk = {all = 0, scoped = {}}
  for i = 1, #flat, 2 do
    local scope, v = flat[i], tonumber(flat[i + 1])
    if scope == 'all' then
      mk.all = v
    else
      local kind, value = string.match(scope, '^(%a+):(.+)$')
      if kind and FIELD_OF[kind] then table.insert(mk.scoped, {kind, value, v}) end
    end
  end
  return mk
end

-- tidings.domain.readstate.Markers.is_unread
local function is_unread(mk, h)
  if h.r then return false end
  local f = tonumber(h.f)
  if f <= mk.all then return false end
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
  q.mk = {all = q.all or 0, scoped = q.scoped or {}}
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
  if q.unread ~= nil and is_unread(q.mk, h) ~= q.unread then return false end
  return true
end
