"""Serialising fan-out's join-or-start decision per (user, bundle) on SQL.

Two units delivering events of one bundle to the same user must not both decide to start a
display group: when a group starts there is no base row yet for ``SELECT … FOR UPDATE`` to lock.
So a unit first locks one row of ``bundle_locks`` per (user, bundle), in key order (two units
never wait on each other in a circle), and only then reads the newest base. A unit that waited
reads after the first one committed, so it sees the group the first one started.

- PostgreSQL: ``INSERT … ON CONFLICT DO NOTHING`` makes the rows exist, ``SELECT … FOR UPDATE``
  locks them (row locks live in the rows, so a chunk of thousands of users needs no shared lock
  memory, unlike advisory locks). A row the retention job deleted meanwhile is made again.
- MariaDB/MySQL: ``INSERT … ON DUPLICATE KEY UPDATE`` takes the exclusive lock at once (an
  ``INSERT IGNORE`` would take a shared one, and two units upgrading it would deadlock).
- SQLite: nothing to do; a writing unit holds the database's one write lock to its end.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, select, tuple_
from sqlalchemy.dialects import mysql as mysql_dialect

from tidings.clock import Clock
from tidings.store.sql.database import Database
from tidings.store.sql.schema import bundle_locks

IN_LIST = 5000
b = bundle_locks.c


def lock(db: Database, conn: Connection, users: Sequence[str], bundle_hash: str,
         clock: Clock) -> None:
    """Hold the (user, bundle) locks of these users until the unit ends."""
    if db.backend == "sqlite" or not users:
        return
    now = clock.now_us()
    wanted = sorted(set(users))
    if db.backend == "mysql":
        upsert = mysql_dialect.insert(bundle_locks)
        upsert = upsert.on_duplicate_key_update(bundle_hash=upsert.inserted.bundle_hash)
        for start in range(0, len(wanted), 1000):
            conn.execute(upsert, [{"user_id": u, "bundle_hash": bundle_hash, "created_at": now}
                                  for u in wanted[start:start + 1000]])
        return
    missing = wanted
    while missing:
        db.insert_many(conn, bundle_locks, [
            {"user_id": u, "bundle_hash": bundle_hash, "created_at": now} for u in missing
        ], ignore=True)
        locked: set[str] = set()
        for start in range(0, len(missing), IN_LIST):
            part = missing[start:start + IN_LIST]
            locked.update(conn.execute(
                select(b.user_id)
                .where(b.bundle_hash == bundle_hash, b.user_id.in_(part))
                .order_by(b.user_id.collate("C"))
                .with_for_update()).scalars())
        # A row deleted (by the retention job) while this unit waited for it is not returned
        # locked: make it again and lock it.
        missing = [u for u in missing if u not in locked]


def forget(conn: Connection, before: int, limit: int) -> int:
    """Delete up to ``limit`` lock rows made before ``before``; return how many went."""
    old = select(b.user_id, b.bundle_hash).where(b.created_at < before).limit(limit)
    keys = [(r.user_id, r.bundle_hash) for r in conn.execute(old)]
    if not keys:
        return 0
    result = conn.execute(delete(bundle_locks).where(
        tuple_(b.user_id, b.bundle_hash).in_(keys), b.created_at < before))
    return max(result.rowcount, 0)
