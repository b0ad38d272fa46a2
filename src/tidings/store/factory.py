"""The composition root of storage: a store URL in, a :class:`tidings.ports.Store` out.

``memory://`` (any name after it) gives a new :class:`tidings.store.memory.MemoryStore`;
every other URL is a SQL database (SQLite, PostgreSQL, MariaDB/MySQL). Only this module
knows which store is which; everything else sees the ports.
"""

from __future__ import annotations

from tidings import ports
from tidings.clock import Clock
from tidings.exceptions import ConfigError

MEMORY = "memory://"


def open_store(url: str, clock: Clock, *, lease_seconds: float = 60.0, max_attempts: int = 8,
               backoff_seconds: float = 2.0, pool_size: int = 5) -> ports.Store:
    """Open the store a URL names, with the job queue's lease, attempts and backoff."""
    if not isinstance(url, str) or not url:
        raise ConfigError("TIDINGS_DATABASE_URL: a store URL is required")
    if url.startswith(MEMORY):
        from tidings.store.memory import MemoryStore

        return MemoryStore(clock, lease_seconds=lease_seconds, max_attempts=max_attempts,
                           backoff_seconds=backoff_seconds)
    try:
        # imported here: a memory store needs neither SQLAlchemy nor a driver
        from tidings.store.sql.store import (  # type: ignore[import-not-found, unused-ignore]
            SqlStore,
        )
    except ModuleNotFoundError as exc:
        if exc.name != "tidings.store.sql.store":
            raise
        raise ConfigError(f"TIDINGS_DATABASE_URL: no store for {url.split('://')[0]!r} "
                          "URLs in this build") from None
    store: ports.Store = SqlStore(url, clock, lease_seconds=lease_seconds,
                                  max_attempts=max_attempts, backoff_seconds=backoff_seconds,
                                  pool_size=pool_size)
    return store
