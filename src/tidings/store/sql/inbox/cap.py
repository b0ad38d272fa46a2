"""The per-user inbox cap on SQL: an upper bound of each inbox's size, and an exact trim that
keeps the newest notifications by (created_at, event id).

``users.inbox_rows`` grows with every insert — the same upsert registers the users written to;
on PostgreSQL it is part of the insert's statement, with the delivery records
(:func:`insert_and_grow`) — and is not
lowered by removals (retraction, retention), so it is never below the true count.
Fan-out asks :func:`over_cap` for the users it wrote to; only those whose bound passes the cap
are trimmed, and the trim resets the bound to the truth.
"""

from __future__ import annotations

import functools
from collections import Counter
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
    update,
)

from tidings.domain.views import NotificationKey
from tidings.store.sql.core.bulk import column_params, unnest_insert
from tidings.store.sql.core.database import Database
from tidings.store.sql.inbox import holders
from tidings.store.sql.schema import notifications, users

IN_LIST = 5000
n = notifications.c
s = users.c


def grow(db: Database, conn: Connection, written: Sequence[tuple[str, int]]) -> dict[str, int]:
    """Register the users of these (user, created_at) rows (dated with their first) and count
    one more stored notification per row, in key order; return the new bounds where the
    backend hands them back with the write (``RETURNING``), so the check that follows need not
    read them again."""
    counts = Counter(user for user, _ in written)
    if not counts:
        return {}
    first: dict[str, int] = {}
    for user, created_at in written:
        first[user] = min(created_at, first.get(user, created_at))
    rows = [{"user_id": u, "created_at": first[u], "inbox_rows": counts[u]}
            for u in sorted(counts)]
    returned = db.add_rows(conn, users, ["user_id"], "inbox_rows", rows,
                           returning=("user_id", "inbox_rows"))
    return {user: bound for user, bound in returned or ()}


@functools.lru_cache(maxsize=16)
def _insert_and_grow(columns: tuple[str, ...], single: tuple[bool, ...],
                     also: str) -> TextClause:
    rows = unnest_insert(notifications, columns, True, returning=("user_id", "created_at"),
                         single=single).text
    more = f", also AS ({also})" if also else ""
    return text(f"""
WITH written AS ({rows}){more}, grown AS (
INSERT INTO users (user_id, created_at, inbox_rows)
SELECT user_id, min(created_at), count(*) FROM written GROUP BY user_id ORDER BY user_id
ON CONFLICT (user_id) DO UPDATE SET inbox_rows = COALESCE(users.inbox_rows, 0) + EXCLUDED.inbox_rows
RETURNING user_id, inbox_rows), recorded AS ({holders.WRITE_SQL})
SELECT user_id, inbox_rows, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT) FROM grown
UNION ALL SELECT NULL, NULL, event_id, chunk FROM recorded""")


def insert_and_grow(db: Database, conn: Connection, columns: tuple[str, ...],
                    values: Sequence[Sequence[Any]],
                    records: Sequence[holders.Record], also: TextClause | None = None,
                    also_params: Mapping[str, Any] | None = None) -> dict[str, int]:
    """PostgreSQL: notification rows given column by column (``values``: each of
    ``columns``' values in the rows' order; a duplicate skipped), their delivery records
    (:mod:`.holders`; one whose key is there merged after) and :func:`grow` of their users by
    the rows that went in, in one statement; the new bounds. ``also``: another write of the
    same statement (with its own ``also_params``, named apart from ``c0`` …)."""
    if not values or not values[0]:
        return {}
    single, params = column_params(values)
    statement = _insert_and_grow(columns, single, "" if also is None else also.text)
    bounds: dict[str, int] = {}
    written: set[tuple[int, int]] = set()
    for user, bound, event, chunk in db.fetch(
            conn, statement, {**params, **holders.params(records), **(also_params or {})}):
        if user is None:
            written.add((event, chunk))
        else:
            bounds[user] = bound
    holders.merge(db, conn, records, written)
    return bounds


def register(db: Database, conn: Connection, written: Sequence[tuple[str, int]]) -> None:
    """Register the users of these (user, created_at) rows, dated with their first, where
    the inbox rows live elsewhere (the hot store): no bound to raise here."""
    first: dict[str, int] = {}
    for user, created_at in written:
        first[user] = min(created_at, first.get(user, created_at))
    db.insert_many(conn, users, [{"user_id": u, "created_at": first[u]} for u in sorted(first)],
                   ignore=True)


# the transaction-scoped advisory lock multi-step inbox writers take in turn (PostgreSQL)
HOLD_KEY = 0x7469_6469_6E67  # "tiding"


def hold(db: Database, conn: Connection, names: Sequence[str]) -> None:
    """Before a unit writes to the inboxes of ``names`` in several steps (a batch of
    events, each step locking its users' ``users`` rows in key order): two such units on
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


def over_cap(conn: Connection, names: Sequence[str], cap: int,
             known: dict[str, int]) -> list[str]:
    """Those of ``names`` whose bound passes ``cap``; ``known`` bounds are not read again."""
    found = [u for u in set(names) if known.get(u, 0) > cap]
    wanted = sorted(u for u in set(names) if u not in known)
    for start in range(0, len(wanted), IN_LIST):
        # literal ids, as InboxStore.delivered does: no generic plan over a long IN list
        found += conn.execute(select(s.user_id).where(
            s.user_id.in_(bindparam("users", wanted[start:start + IN_LIST], expanding=True,
                                    literal_execute=True)), s.inbox_rows > cap)).scalars()
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
         remove: Callable[[Sequence[NotificationKey]], int], known: dict[str, int]) -> int:
    """Delete the user's notifications older than their newest ``cap`` (by time); set the
    bound to what is left (in ``known`` too). Returns rows deleted."""
    removed = 0
    while True:
        newest = _newest(conn, user, cap + 1)
        if len(newest) <= cap:
            break
        doomed, complete = _at_or_before(conn, user, newest[cap])
        removed += remove(doomed)
        if complete:
            newest = newest[:cap]
            break
    conn.execute(update(users).where(s.user_id == user).values(inbox_rows=len(newest)))
    if user in known:
        known[user] = len(newest)
    return removed
