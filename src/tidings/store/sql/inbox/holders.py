"""Who holds a notification of an event, on SQL: fan-out's idempotency check and retraction's
users, through the delivery records (``deliveries``, :mod:`tidings.store.sql.core.recipients`),
a few bytes a recipient, instead of an (event, user) index on every notification.

Every insert of notification rows writes a record per event (and per
:data:`~tidings.store.sql.core.recipients.PART` users) in the same transaction, so a committed
notification always has its record. A record may still name a user whose row was removed
since (the inbox cap, one recipient's deletion): the records say who may hold an event, and
the rows' primary key (user, event) says who does. A first delivery (the usual case) finds no
record of its event, in one probe of the records' primary key, and looks nobody up; a later
chunk of the same event reads the earlier chunks' records (about 2 B a user they reached),
whose users are not its own, and looks nobody up either.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, text, update

from tidings.domain.views import NotificationKey
from tidings.store.sql.core import recipients
from tidings.store.sql.core.bulk import probes
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import deliveries, notifications

n = notifications.c
d = deliveries.c
IN_LIST = 5000
# PostgreSQL: the rows of a JSON array of users that hold the event, one probe of the
# primary key (user, event) per user
HOLDERS = probes(notifications, ("event_id",), "user_id", ("user_id",))
RECORDS = select(d.users).where(d.event_id == bindparam("event_id"))  # one event's records
# PostgreSQL: the records of a delivery at once, those already there left as they are; the
# keys of those written come back (the others are merged: :func:`merge`). Also a part of the
# rows' own statement (``cap.insert_and_register``), with the parameters of :func:`params`.
WRITE_SQL = ("INSERT INTO deliveries (event_id, chunk, users) "
             "SELECT * FROM unnest(CAST(:events AS BIGINT[]), CAST(:chunks AS BIGINT[]), "
             "CAST(:values AS BYTEA[])) ON CONFLICT DO NOTHING RETURNING event_id, chunk")
WRITE = text(WRITE_SQL)

Record = tuple[int, int, list[str], bytes]  # event, chunk key, its users, its value


def records_of(delivered: Iterable[tuple[int, str]]) -> list[Record]:
    """The records of these (event, user) deliveries: per event, a part of its users each."""
    by_event: dict[int, list[str]] = {}
    for event, user in delivered:
        by_event.setdefault(event, []).append(user)
    return [(event, key, users, value) for event in sorted(by_event)
            for key, users, value in recipients.parts(by_event[event])]


def params(records: Sequence[Record]) -> dict[str, Any]:
    """PostgreSQL: the parameters of :data:`WRITE_SQL` for these records."""
    return {"events": [r[0] for r in records], "chunks": [r[1] for r in records],
            "values": [r[3] for r in records]}


def record(db: Database, conn: Connection, delivered: Iterable[tuple[int, str]]) -> None:
    """The records of these (event, user) deliveries, per event, in their rows' transaction.
    A record whose key the event has already (a user delivered again after their row was
    removed) is merged into it."""
    records = records_of(delivered)
    if not records:
        return
    if db.backend == "postgresql":
        written = {(e, k) for e, k in db.fetch(conn, WRITE, params(records))}
    else:
        statement = insert(deliveries).prefix_with("OR IGNORE", dialect="sqlite").prefix_with(
            "IGNORE", dialect="mysql")
        result = conn.execute(statement, [{"event_id": e, "chunk": k, "users": v}
                                          for e, k, _, v in records])
        # all written, or some met a record there already (which the merge reads again)
        written = ({(e, k) for e, k, _, _ in records} if result.rowcount == len(records)
                   else set())
    merge(db, conn, records, written)


def merge(db: Database, conn: Connection, records: Sequence[Record],
          written: set[tuple[int, int]]) -> None:
    """The records not ``written`` (their key was there) merged into those there."""
    for event, key, users, _ in records:
        if (event, key) not in written:
            _merge(db, conn, event, key, users)


def _merge(db: Database, conn: Connection, event: int, key: int, users: list[str]) -> None:
    """Add ``users`` to the event's record of this key (locked first where rows lock)."""
    query = select(d.users).where(d.event_id == event, d.chunk == key)
    if db.skip_locked:
        query = query.with_for_update()
    stored = conn.execute(query).scalar_one_or_none()
    if stored is None:  # the record that was in the way went (its unit rolled back)
        conn.execute(insert(deliveries).values(event_id=event, chunk=key,
                                               users=recipients.encode(users)))
        return
    known = set(recipients.decode(stored))
    if not known.issuperset(users):
        conn.execute(update(deliveries).where(d.event_id == event, d.chunk == key)
                     .values(users=recipients.encode(sorted(known.union(users)))))


def recorded(db: Database, conn: Connection, event_ids: Iterable[int]
             ) -> dict[int, list[list[str]]]:
    """The users of each record of these events (an event with none: absent)."""
    found: dict[int, list[list[str]]] = {}
    for part in db.parts(sorted(set(event_ids))):
        for event, value in conn.execute(select(d.event_id, d.users)
                                         .where(db.among(d.event_id, part))):
            found.setdefault(event, []).append(recipients.decode(value))
    return found


def delivered(db: Database, conn: Connection, event_id: int, users: Sequence[str]) -> set[str]:
    """Those of ``users`` who hold a notification of the event: the records' users among
    them, confirmed by the rows' primary key."""
    if not users:
        return set()
    # one probe of the records' primary key; none: the usual case, a first delivery
    values = [r[0] for r in db.fetch(conn, RECORDS, {"event_id": event_id})]
    wanted = set(users)
    candidates: set[str] = set()
    for value in values:
        candidates.update(wanted.intersection(recipients.decode(value)))
    if not candidates:
        return set()  # none, or a later chunk of the event: the earlier chunks' are others
    return _holding(db, conn, event_id, sorted(candidates))


def _holding(db: Database, conn: Connection, event_id: int, users: Sequence[str]) -> set[str]:
    """Those of ``users`` whose row of the event is there, by its primary key."""
    if db.backend == "postgresql":  # a probe per user, planned for its own values
        params = {"values": json.dumps(list(users)), "event_id": event_id}
        return {r[0] for r in db.fetch(conn, HOLDERS, params, planned_each_time=True)}
    found: set[str] = set()
    for start in range(0, len(users), IN_LIST):
        # the users as literals: an IN list of the primary key's leading column
        found.update(conn.execute(
            select(n.user_id).where(n.event_id == event_id, n.user_id.in_(bindparam(
                "chunk_users", list(users[start:start + IN_LIST]), expanding=True,
                literal_execute=True)))).scalars().all())
    return found


def _any_holding(db: Database, conn: Connection, event_id: int, users: Sequence[str]) -> bool:
    """Whether any of ``users`` holds the event (the lookup stops at the first that does)."""
    if not users:
        return False
    for part in db.parts(list(users)):
        if conn.execute(select(n.user_id).where(n.event_id == event_id,
                                                db.among(n.user_id, part)).limit(1)
                        ).first() is not None:
            return True
    return False


def held(db: Database, conn: Connection, event_ids: Sequence[int]) -> set[int]:
    """Those of the events that any user holds a notification of: the events with records,
    each confirmed by the users of its first record that has one whose row is there."""
    return {event for event, parts in recorded(db, conn, event_ids).items()
            if any(_any_holding(db, conn, event, users) for users in parts)}


def keys_for_events(db: Database, conn: Connection, event_ids: Sequence[int]
                    ) -> list[NotificationKey]:
    """Every stored notification of these events: the records' users, then their rows by
    primary key."""
    keys: list[NotificationKey] = []
    for event, parts in sorted(recorded(db, conn, event_ids).items()):
        for part in db.parts(sorted({u for users in parts for u in users})):
            keys += [NotificationKey(r.user_id, r.event_id, r.display_hash, bool(r.bundle_base))
                     for r in conn.execute(
                         select(n.user_id, n.event_id, n.display_hash, n.bundle_base)
                         .where(n.event_id == event, db.among(n.user_id, part)))]
    return keys


def forget(db: Database, conn: Connection, removed: Sequence[NotificationKey]) -> None:
    """After these rows were deleted: drop the records of each of their events that no
    recorded user holds any more (a retraction's events; a recipient's own deletion leaves
    the others' rows, found at the first of them)."""
    gone: dict[int, set[str]] = {}
    for key in removed:
        gone.setdefault(key.event_id, set()).add(key.user_id)
    emptied = [event for event, parts in recorded(db, conn, gone).items()
               if not any(_any_holding(db, conn, event, [u for u in users if u not in gone[event]])
                          for users in parts)]
    drop(db, conn, emptied)


def drop(db: Database, conn: Connection, event_ids: Sequence[int]) -> None:
    """Delete the records of these events."""
    for part in db.parts(sorted(set(event_ids))):
        conn.execute(delete(deliveries).where(db.among(d.event_id, part)))
