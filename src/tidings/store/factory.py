"""The composition root: a store URL (and its settings) becomes a :class:`tidings.ports.Store`.

``memory://`` (any name after it) gives a new :class:`tidings.store.memory.MemoryStore`; every
other URL is a SQL database (SQLite, PostgreSQL, MariaDB/MySQL). Only this module knows which
implementation serves which URL; everything above it sees ports.
"""

from __future__ import annotations

from tidings.clock import Clock
from tidings.ports import Store
from tidings.store.sql.timeouts import SqlTimeouts

MEMORY = "memory://"


def open_store(url: str, clock: Clock, *, lease_seconds: float = 60.0, max_attempts: int = 8,
               backoff_seconds: float = 2.0, pool_size: int = 5,
               hot_url: str | None = None, sql_timeouts: SqlTimeouts | None = None) -> Store:
    """``memory://`` gives the in-memory store; every other URL a SQL database.

    ``hot_url`` (``redis://…`` or ``redis+cluster://…``) moves inboxes, read watermarks,
    unread counts and timelines of a SQL store to Redis, and live updates to its pub/sub.
    ``sql_timeouts`` bound every wait on a SQL database (default: :class:`SqlTimeouts`'s).
    """
    if url.startswith(MEMORY):
        from tidings.store.memory import MemoryStore

        return MemoryStore(clock, lease_seconds=lease_seconds, max_attempts=max_attempts,
                           backoff_seconds=backoff_seconds)
    # imported here: a memory store needs neither SQLAlchemy nor a driver
    from tidings.store.sql.store import SqlStore

    sql = SqlStore(url, clock, lease_seconds=lease_seconds, max_attempts=max_attempts,
                   backoff_seconds=backoff_seconds, pool_size=pool_size, timeouts=sql_timeouts)
    if not hot_url:
        return sql
    from tidings.store.hot import HotStore

    return HotStore(sql, hot_url)
