"""Who holds a notification of an event, on SQL: fan-out's idempotency check and retraction's
users, through the delivery records (``deliveries``, :mod:`tidings.store.sql.core.recipients`),
a few bytes a recipient, instead of an (event, user) index on every notification.

Every insert of notification rows writes a record per event (and per
:data:`~tidings.store.sql.core.recipients.PART` users) in the same transaction, so a committed
notification always has its record. A record may still name a user whose row was removed
since (the inbox cap, one recipient's deletion): the records say who may hold an event, and
the rows' primary key (user, event) says who does. A first delivery (the usual case) finds no
record of its event, in one probe of the records' primary key, and looks nobody up; a later
chunk of the same event finds the earlier chunks' records, whose users are not its own, and
looks nobody up either.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

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
# keys of those written come back (the others are merged: :func:`_merge`)
WRITE = text("INSERT INTO deliveries (event_id, chunk, users) "
             "SELECT * FROM unnest(CAST(:events AS BIGINT[]), CAST(:chunks AS BIGINT[]), "
             "CAST(:values AS BYTEA[])) ON CONFLICT DO NOTHING RETURNING event_id, chunk")

Record = tuple[int, int, list[str], bytes]  # event, chunk key, its users, its value


def record(db: Database, conn: Connection, delivered: Iterable[tuple[int, str]]) -> None:
    """The records of these (event, user) deliveries, per event, in their rows' transaction.
    A record whose key the event has already (a user delivered again after their row was
    removed) is merged into it."""
    by_event: dict[int, list[str]] = {}
    for event, user in delivered:
        by_event.setdefault(event, []).append(user)
    records = [(event, key, users, value) for event in sorted(by_event)
               for key, users, value in recipients.parts(by_event[event])]
    if not records:
        return
    if db.backend == "postgresql":
        written = {(e, k) for e, k in db.fetch(conn, WRITE, {
            "events": [r[0] for r in records], "chunks": [r[1] for r in records],
            "values": [r[3] for r in records]})}
    else:
        statement = insert(deliveries).prefix_with("OR IGNORE", dialect="sqlite").prefix_with(
            "IGNORE", dialect="mysql")
        result = conn.execute(statement, [{"event_id": e, "chunk": k, "users": v}
                                          for e, k, _, v in records])
        # all written, or some met a record there already (which the merge reads again)
        written = ({(e, k) for e, k, _, _ in records} if result.rowcount == len(records)
                   else set())
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


def recorded(db: Database, conn: Connection, event_ids: Iterable[int]) -> dict[int, set[str]]:
    """The users the records of these events name (an event with none: absent)."""
    wanted = sorted(set(event_ids))
    found: dict[int, set[str]] = {}
    if len(wanted) == 1:  # fan-out's check: one probe of the records' primary key
        values = [r[0] for r in db.fetch(conn, RECORDS, {"event_id": wanted[0]})]
        if values:
            found[wanted[0]] = {u for value in values for u in recipients.decode(value)}
        return found
    for part in db.parts(wanted):
        for event, value in conn.execute(select(d.event_id, d.users)
                                         .where(db.among(d.event_id, part))):
            found.setdefault(event, set()).update(recipients.decode(value))
    return found


def delivered(db: Database, conn: Connection, event_id: int, users: Sequence[str]) -> set[str]:
    """Those of ``users`` who hold a notification of the event: the records' users among
    them, confirmed by the rows' primary key."""
    if not users:
        return set()
    named = recorded(db, conn, [event_id]).get(event_id)
    if not named:
        return set()  # the usual case, a first delivery: one probe of the records
    candidates = sorted(named.intersection(users))
    if not candidates:
        return set()  # a later chunk of the event: the earlier chunks' users are others
    return _holding(db, conn, event_id, candidates)


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
    for part in db.parts(list(users)):
        if conn.execute(select(n.user_id).where(n.event_id == event_id,
                                                db.among(n.user_id, part)).limit(1)
                        ).first() is not None:
            return True
    return False


def held(db: Database, conn: Connection, event_ids: Sequence[int]) -> set[int]:
    """Those of the events that any user holds a notification of: the events with records,
    each confirmed by the first of its recorded users whose row is there."""
    return {event for event, users in recorded(db, conn, event_ids).items()
            if _any_holding(db, conn, event, sorted(users))}


def keys_for_events(db: Database, conn: Connection, event_ids: Sequence[int]
                    ) -> list[NotificationKey]:
    """Every stored notification of these events: the records' users, then their rows by
    primary key."""
    keys: list[NotificationKey] = []
    for event, users in sorted(recorded(db, conn, event_ids).items()):
        for part in db.parts(sorted(users)):
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
    emptied = [event for event, users in recorded(db, conn, gone).items()
               if not _any_holding(db, conn, event, sorted(users - gone[event]))]
    drop(db, conn, emptied)


def drop(db: Database, conn: Connection, event_ids: Sequence[int]) -> None:
    """Delete the records of these events."""
    for part in db.parts(sorted(set(event_ids))):
        conn.execute(delete(deliveries).where(db.among(d.event_id, part)))
