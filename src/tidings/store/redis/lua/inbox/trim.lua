-- Keep the newest ARGV[1] notifications by (created, id), deciding when it runs: in a unit's
-- writes, after the deliveries buffered before it, whose dates their bundles decide as they
-- run (a joined row moves past its bundle's newest base). Saved rows (:saved) go last: the
-- oldest unsaved ones first, then, if there are more saved ones than the cap, the oldest of
-- them (tidings.domain.flags.beyond_cap). Returns rows deleted.
local extra = redis.call('ZCARD', P .. ':ids') - tonumber(ARGV[1])
if extra <= 0 then return 0 end
local left, start = extra, 0
while left > 0 do  -- the oldest unsaved rows
  local ms = redis.call('ZRANGE', P .. ':ids', start, start + 127)
  if #ms == 0 then break end
  for _, m in ipairs(ms) do
    if left == 0 then break end
    if redis.call('ZSCORE', P .. ':saved', m) then
      start = start + 1
    else
      remove_row(dec(m))
      left = left - 1
    end
  end
end
if left > 0 then  -- more saved rows than the cap: the oldest of them
  for _, m in ipairs(redis.call('ZRANGE', P .. ':saved', 0, left - 1)) do remove_row(dec(m)) end
end
return extra
