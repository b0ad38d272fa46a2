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

import json
from collections.abc import Sequence

from sqlalchemy import Connection, delete, select, text, tuple_
from sqlalchemy.dialects import mysql as mysql_dialect

from tidings.clock import Clock
from tidings.store.sql.database import Database
from tidings.store.sql.schema import bundle_locks

IN_LIST = 5000
b = bundle_locks.c
# PostgreSQL: the lock rows of the (user, bundle) pairs of ``:pairs`` (a JSON array in key
# order), one probe of the primary key a pair, each locked as it is found: in the array's order
LOCK_PAIRS = text("""
SELECT l.user_id, l.bundle_hash FROM json_array_elements(CAST(:pairs AS JSON)) AS k(v)
CROSS JOIN LATERAL (SELECT user_id, bundle_hash FROM bundle_locks
                    WHERE user_id = k.v->>0 AND bundle_hash = k.v->>1 LIMIT 1 FOR UPDATE) l""")


def lock(db: Database, conn: Connection, users: Sequence[str], bundle_hash: str,
         clock: Clock) -> None:
    """Hold the (user, bundle) locks of these users until the unit ends."""
    lock_pairs(db, conn, [(u, bundle_hash) for u in users], clock)


def lock_pairs(db: Database, conn: Connection, pairs: Sequence[tuple[str, str]],
               clock: Clock) -> None:
    """Hold the locks of these (user, bundle) pairs until the unit ends, taken in key order
    (user, then bundle): for one bundle, the users' order, as every unit takes them."""
    if db.backend == "sqlite" or not pairs:
        return
    now = clock.now_us()
    wanted = sorted(set(pairs))
    if db.backend == "mysql":
        upsert = mysql_dialect.insert(bundle_locks)
        upsert = upsert.on_duplicate_key_update(bundle_hash=upsert.inserted.bundle_hash)
        for start in range(0, len(wanted), 1000):
            conn.execute(upsert, [{"user_id": u, "bundle_hash": h, "created_at": now}
                                  for u, h in wanted[start:start + 1000]])
        return
    missing = wanted
    while missing:
        db.insert_many(conn, bundle_locks, [
            {"user_id": u, "bundle_hash": h, "created_at": now} for u, h in missing
        ], ignore=True)
        locked: set[tuple[str, str]] = set()
        for start in range(0, len(missing), IN_LIST):
            part = missing[start:start + IN_LIST]  # each pair locked in this (key) order
            locked.update((r[0], r[1]) for r in db.fetch(
                conn, LOCK_PAIRS, {"pairs": json.dumps(part)}))
        # A row deleted (by the retention job) while this unit waited for it is not returned
        # locked: make it again and lock it.
        missing = [p for p in missing if p not in locked]


def forget(conn: Connection, before: int, limit: int) -> int:
    """Delete up to ``limit`` lock rows made before ``before``; return how many went."""
    old = select(b.user_id, b.bundle_hash).where(b.created_at < before).limit(limit)
    keys = [(r.user_id, r.bundle_hash) for r in conn.execute(old)]
    if not keys:
        return 0
    result = conn.execute(delete(bundle_locks).where(
        tuple_(b.user_id, b.bundle_hash).in_(keys), b.created_at < before))
    return max(result.rowcount, 0)
