-- Base rows newest first by (created, id), strictly before the cursor, matching the query:
-- Jiepang's server-side list by (user, types) with field conditions, limit, max_id, since_id.
-- ARGV[1]: JSON {types, category, section, unread, actor, object, max_id, since_id, all,
--                scoped, limit, before_c, before_id}
-- Returns the rows as JSON (json_rows).
return json_rows(page_rows(query_of(ARGV[1])))
