-- Store rows as decided by the caller (groups given); rows already stored are skipped.
-- ARGV: per row id, created, type, category, section, actor, object, bundle, display,
--       queryable fields (JSON object, or ''), flags
local written = 0
for i = 1, #ARGV, 11 do
  written = written + insert(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4],
    opt(ARGV[i + 5]), opt(ARGV[i + 6]), ARGV[i + 7], ARGV[i + 8], '', ARGV[i + 9], false,
    false, ARGV[i + 10])
end
return written
