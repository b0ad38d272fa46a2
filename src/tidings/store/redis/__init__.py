"""Redis and Redis Cluster for the hot parts: inboxes, read watermarks, unread counts,
timelines and live updates (``docs/redis.md``)."""
