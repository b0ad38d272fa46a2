"""Who already holds a notification of an event: fan-out's idempotency check on SQL, through
the (event, user) index. A first delivery (the usual case) finds nobody, so each lookup first
asks whether there is anyone at all, in one descent of the index, before any user is probed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, select, text

from tidings.store.sql.core.bulk import any_within, probes
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import notifications

n = notifications.c
IN_LIST = 5000
HOLDERS = probes(notifications, ("event_id",), "user_id", ("user_id",))
ANY_HOLDER = any_within(notifications, ("event_id",), "user_id")
EVENT_USER = "ix_notifications_event_id_user_id"  # which MariaDB's estimates may pass over
# PostgreSQL: the events of an array that anyone holds, one descent of the index an event
HELD = text("SELECT e.id FROM unnest(CAST(:ids AS BIGINT[])) AS e(id) "
            "WHERE EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = e.id)")


def delivered(db: Database, conn: Connection, event_id: int, users: Sequence[str]) -> set[str]:
    """Those of ``users`` who hold a notification of the event."""
    found: set[str] = set()
    if not users:
        return found
    if db.backend == "postgresql":
        params = {"values": json.dumps(list(users)), "event_id": event_id}
        if not db.fetch(conn, ANY_HOLDER, params, planned_each_time=True):
            return found  # the usual case, a first delivery: one descent of the index
        # else a probe of the (event, user) index per user
        return {r[0] for r in db.fetch(conn, HOLDERS, params)}
    if not _any_holder(conn, event_id, users):
        return found
    for start in range(0, len(users), IN_LIST):
        part = list(users[start:start + IN_LIST])
        # SQLite and MariaDB: the chunk's ids as literals. (On PostgreSQL, as a bound list, a
        # prepared statement's generic plan filtered the event's rows with an unhashed IN
        # list: (rows of the event so far) x (chunk size) comparisons a chunk; HOLDERS probes
        # user by user instead.)
        found.update(conn.execute(
            select(n.user_id).where(n.event_id == event_id, n.user_id.in_(
                bindparam("chunk_users", part, expanding=True, literal_execute=True)))
        ).scalars().all())
    return found


def held(db: Database, conn: Connection, event_ids: Sequence[int]) -> set[int]:
    """Those of the events that any user holds a notification of, in one statement (a part
    of :data:`IN_LIST` events at a time off PostgreSQL)."""
    wanted = sorted(set(event_ids))
    if not wanted:
        return set()
    if db.backend == "postgresql":
        return {r[0] for r in db.fetch(conn, HELD, {"ids": wanted})}
    found: set[int] = set()
    for start in range(0, len(wanted), IN_LIST):
        query = select(n.event_id).where(n.event_id.in_(bindparam(
            "held_events", wanted[start:start + IN_LIST], expanding=True,
            literal_execute=True))).distinct()
        for name in ("mysql", "mariadb"):
            query = query.with_hint(notifications, f"FORCE INDEX ({EVENT_USER})", name)
        found.update(conn.execute(query).scalars())
    return found


def _any_holder(conn: Connection, event_id: int, users: Sequence[str]) -> bool:
    """SQLite and MariaDB: whether any user between the least and the greatest of ``users``
    holds the event (the (event, user) index's range of the chunk), the bounds computed here,
    as their binary collations order user ids as Python does (PostgreSQL runs ``ANY_HOLDER``,
    in the column's collation): when none does, no user of the chunk is looked up."""
    query = select(n.event_id).where(n.event_id == event_id, n.user_id >= min(users),
                                     n.user_id <= max(users)).limit(1)
    for name in ("mysql", "mariadb"):  # not the primary key's range of the users' rows,
        query = query.with_hint(notifications, f"FORCE INDEX ({EVENT_USER})", name)
    return conn.execute(query).first() is not None
