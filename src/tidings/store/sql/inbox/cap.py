"""The per-user inbox cap on SQL: an exact check of some inboxes' sizes, and an exact trim
that keeps the newest notifications by (created_at, event id).

No count is stored: a delivery writes its rows and registers its users (:func:`register`, or
:func:`insert_and_register` on PostgreSQL, one statement with the rows, their delivery records
and the bundles they open), and writes nothing to a user's row
that exists. Fan-out trims the inboxes that about one delivery in a margin checks
(:mod:`tidings.domain.inboxcap`); :func:`over_cap` answers exactly for the few users a batch
or the trim job asks about, by reading up to cap + 1 index entries of each.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    TextClause,
    and_,
    bindparam,
    false,
    or_,
    select,
    text,
    true,
)

from tidings.domain.views import NotificationKey
from tidings.store.sql.core.bulk import column_params, unnest_insert
from tidings.store.sql.core.database import Database
from tidings.store.sql.inbox import holders
from tidings.store.sql.schema import notifications, users

IN_LIST = 5000
n = notifications.c
s = users.c


@functools.lru_cache(maxsize=16)
def _insert_and_register(columns: tuple[str, ...], single: tuple[bool, ...],
                         also: str) -> TextClause:
    rows = unnest_insert(notifications, columns, True, returning=("user_id", "created_at"),
                         single=single).text
    more = f", also AS ({also})" if also else ""
    return text(f"""
WITH written AS ({rows}){more}, registered AS (
INSERT INTO users (user_id, created_at)
SELECT user_id, min(created_at) FROM written GROUP BY user_id ORDER BY user_id
ON CONFLICT (user_id) DO NOTHING), recorded AS ({holders.WRITE_SQL})
SELECT event_id, chunk FROM recorded""")


def insert_and_register(db: Database, conn: Connection, columns: tuple[str, ...],
                        values: Sequence[Sequence[Any]], records: Sequence[holders.Record],
                        also: TextClause | None = None,
                        also_params: Mapping[str, Any] | None = None) -> None:
    """PostgreSQL: notification rows given column by column (``values``: each of
    ``columns``' values in the rows' order; a duplicate skipped), their delivery records
    (:mod:`.holders`; one whose key is there merged after) and :func:`register` of the users
    of the rows that went in, in one statement. ``also``: another write of the same statement
    (with its own ``also_params``, named apart from ``c0`` …)."""
    if not values or not values[0]:
        return
    single, params = column_params(values)
    statement = _insert_and_register(columns, single, "" if also is None else also.text)
    written = {(event, chunk) for event, chunk in db.fetch(
        conn, statement, {**params, **holders.params(records), **(also_params or {})})}
    holders.merge(db, conn, records, written)


def register(db: Database, conn: Connection, written: Sequence[tuple[str, int]]) -> None:
    """Register the users of these (user, created_at) rows, dated with their first: a user
    already registered is left as it is (no write to their row)."""
    first: dict[str, int] = {}
    for user, created_at in written:
        first[user] = min(created_at, first.get(user, created_at))
    db.insert_many(conn, users, [{"user_id": u, "created_at": first[u]} for u in sorted(first)],
                   ignore=True)


# the transaction-scoped advisory lock multi-step inbox writers take in turn (PostgreSQL)
HOLD_KEY = 0x7469_6469_6E67  # "tiding"


def hold(db: Database, conn: Connection, names: Sequence[str]) -> None:
    """Before a unit writes to the inboxes of ``names`` in several steps (a batch of
    events, each step locking rows of its users in key order: their bundles' locks, the
    ``users`` rows it inserts): two such units on
    overlapping users would lock them in different orders and deadlock, which PostgreSQL
    notices only after ``deadlock_timeout`` (1 s) — a batched fan-out on two workers ran ten
    times slower than on one. On PostgreSQL such units take one transaction-scoped advisory
    lock in turn (locking thousands of rows first would cost a write for each); on
    MariaDB/MySQL the units lock the existing rows in key order first (InnoDB's row locks
    write nothing). SQLite has one writer: nothing to take."""
    if db.backend == "sqlite" or not names:
        return
    if db.backend == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": HOLD_KEY})
        return
    for part in db.parts(sorted(set(names))):
        conn.execute(select(s.user_id).where(db.among(s.user_id, part))
                     .order_by(s.user_id).with_for_update()).all()


def over_cap(conn: Connection, names: Sequence[str], cap: int) -> list[str]:
    """Those of ``names`` who hold more than ``cap`` notifications, sorted: per user, whether
    a (cap + 1)-th row exists, read from the index entries that start with the user."""
    wanted = sorted(set(names))
    beyond = (select(n.event_id).where(n.user_id == s.user_id).limit(1).offset(cap)
              .scalar_subquery())
    found: list[str] = []
    for start in range(0, len(wanted), IN_LIST):
        # literal ids, as InboxStore.delivered does: no generic plan over a long IN list
        found += conn.execute(select(s.user_id).where(
            s.user_id.in_(bindparam("users", wanted[start:start + IN_LIST], expanding=True,
                                    literal_execute=True)), beyond.is_not(None))).scalars()
    return sorted(found)


def _newest(conn: Connection, user: str, limit: int) -> list[tuple[int, int]]:
    """The user's newest ``limit`` positions: base rows and members are read apart, each
    through the (user, base, created_at, event id) index, and merged."""
    positions: list[tuple[int, int]] = []
    for flag in (true(), false()):
        positions += [(r.created_at, r.event_id) for r in conn.execute(
            select(n.created_at, n.event_id)
            .where(n.user_id == user, n.bundle_base == flag)
            .order_by(n.created_at.desc(), n.event_id.desc()).limit(limit))]
    positions.sort(reverse=True)
    return positions[:limit]


def _at_or_before(conn: Connection, user: str, boundary: tuple[int, int]
                  ) -> tuple[list[NotificationKey], bool]:
    """The user's notifications at or before ``boundary`` (up to a batch of each kind), and
    whether that was all of them."""
    created, event_id = boundary
    keys: list[NotificationKey] = []
    complete = True
    for flag in (true(), false()):
        batch = [NotificationKey(r.user_id, r.event_id, r.display_hash, bool(r.bundle_base))
                 for r in conn.execute(
                     select(n.user_id, n.event_id, n.display_hash, n.bundle_base)
                     .where(n.user_id == user, n.bundle_base == flag,
                            or_(n.created_at < created,
                                and_(n.created_at == created, n.event_id <= event_id)))
                     .order_by(n.created_at, n.event_id).limit(IN_LIST))]
        complete = complete and len(batch) < IN_LIST
        keys += batch
    return keys, complete


def trim(conn: Connection, user: str, cap: int,
         remove: Callable[[Sequence[NotificationKey]], int]) -> int:
    """Delete the user's notifications older than their newest ``cap`` (by time). Returns
    rows deleted."""
    removed = 0
    while True:
        newest = _newest(conn, user, cap + 1)
        if len(newest) <= cap:
            return removed
        doomed, complete = _at_or_before(conn, user, newest[cap])
        removed += remove(doomed)
        if complete:
            return removed
