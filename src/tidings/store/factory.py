"""The composition root: a store URL (and its settings) becomes a :class:`tidings.ports.Store`.

Only this module knows which implementation serves which URL; everything above it sees ports.
"""

from __future__ import annotations

from tidings.clock import Clock
from tidings.ports import Store


def open_store(url: str, clock: Clock, *, lease_seconds: float = 60.0, max_attempts: int = 8,
               backoff_seconds: float = 2.0, pool_size: int = 5,
               hot_url: str | None = None) -> Store:
    """``memory://`` gives the in-memory store; every other URL a SQL database.

    ``hot_url`` (``redis://…`` or ``redis+cluster://…``) moves inboxes, read watermarks,
    unread counts and timelines of a SQL store to Redis, and live updates to its pub/sub.
    """
    if url.startswith("memory://"):
        from tidings.store.memory import MemoryStore  # type: ignore[import-not-found,unused-ignore]

        memory: Store = MemoryStore(clock, lease_seconds=lease_seconds,
                                    max_attempts=max_attempts, backoff_seconds=backoff_seconds)
        return memory
    from tidings.store.sql.store import SqlStore

    sql = SqlStore(url, clock, lease_seconds=lease_seconds, max_attempts=max_attempts,
                   backoff_seconds=backoff_seconds, pool_size=pool_size)
    if not hot_url:
        return sql
    from tidings.store.hot import HotStore

    return HotStore(sql, hot_url)
