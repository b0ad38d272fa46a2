-- Keep the newest ARGV[1] notifications by (created, id), deciding when it runs: in a unit's
-- writes, after the deliveries buffered before it, whose dates their bundles decide as they
-- run (a joined row moves past its bundle's newest base). Returns rows deleted.
local extra = redis.call('ZCARD', P .. ':ids') - tonumber(ARGV[1])
if extra <= 0 then return 0 end
for _, m in ipairs(redis.call('ZRANGE', P .. ':ids', 0, extra - 1)) do remove_row(dec(m)) end
return extra
