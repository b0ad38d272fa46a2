"""Fan-out's join-or-start decision per (user, bundle) on SQL: the ``inbox_open`` rows that
serialise it and say where each bundle's newest base row is, the bases read through them, and
the demotion of the groups joined.

``inbox_open`` holds per (user, bundle) the position (created_at, event id) of the bundle's
newest base row (migration 0032), so a decision reads that row by the notifications' primary
key (user, event id): no index of bundle hashes. Every write that changes a bundle's newest
base moves the position in the same transaction: :func:`open_rows` after an insert,
:func:`reopen` after a removal (the next newest base, found by :func:`newest_before`, or no
row). The newest bases of many (user, bundle) pairs at once (``InboxStore.bundle_bases`` of many
bundles) are read in one statement; on PostgreSQL the groups they join are demoted in one.

Two units delivering events of one bundle to the same user must not both decide to start a
display group: when a group starts there is no base row yet for ``SELECT … FOR UPDATE`` to lock.
So a unit first locks the ``inbox_open`` row of each (user, bundle), in key order (two units
never wait on each other in a circle), and only then reads the newest base. A unit that waited
reads after the first one committed, so it sees the group the first one started. A pair with
no row yet is given one with no position to lock; the unit deletes it again if it wrote no
base for the pair after all (:func:`close_unopened`).

- PostgreSQL: ``INSERT … ON CONFLICT DO NOTHING`` makes the rows exist, ``SELECT … FOR UPDATE``
  locks them (row locks live in the rows, so a chunk of thousands of users needs no shared lock
  memory, unlike advisory locks) and hands back their positions; a row deleted while the unit
  waited for it (its bundle lost its last base) is made again. The bases are read in a
  statement of their own, which sees what the unit waited for.
- MariaDB/MySQL: ``INSERT … ON DUPLICATE KEY UPDATE`` takes the exclusive lock at once (an
  ``INSERT IGNORE`` would take a shared one, and two units upgrading it would deadlock); the
  positions are then read by a locking read (the newest committed versions).
- SQLite: nothing to lock; a writing unit holds the database's one write lock to its end.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    and_,
    case,
    delete,
    or_,
    select,
    text,
    true,
    tuple_,
    update,
)
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from tidings.domain.bundling import bundles_alone
from tidings.domain.views import BundleBase, NewNotification
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.hashes import from_sql, pairs_to_sql, to_sql
from tidings.store.sql.inbox import groups as groupsummary
from tidings.store.sql.inbox import types as inboxtypes
from tidings.store.sql.inbox.query import before_place
from tidings.store.sql.schema import inbox_open, notifications

n = notifications.c
o = inbox_open.c
BATCH = 500
IN_LIST = 5000
Pair = tuple[str, str]  # (user, bundle hash)
Position = tuple[int, int]  # (created_at, event id)
# a bundle base's columns as BundleBase takes them, after its bundle hash, then what it says
# of its group (groupsummary.decode's arguments); its type's names from the types dictionary,
# by subqueries: a locking read locks the base rows only, never a type's row (which every
# delivery of the type reads)
BASE_COLUMNS = (n.bundle_hash, n.user_id, n.event_id, n.display_hash, n.created_at, n.fresh_at,
                n.read_at, *inboxtypes.NAMES_OF_ROW, *groupsummary.COLUMNS, n.flags)
# PostgreSQL: the base rows at the (user, event id) places of ``:places`` (a JSON array),
# locked (the base rows, not their types' rows): one probe of the primary key a place
BASES_AT = text("""
SELECT b.bundle_hash, b.user_id, b.event_id, b.display_hash, b.created_at, b.fresh_at,
       b.read_at, ty.name, ty.category, ty.section, b.joined, b.actor, b.group_count,
       b.group_actors, b.flags
FROM json_array_elements(CAST(:places AS JSON)) AS k(v)
CROSS JOIN LATERAL (
  SELECT * FROM notifications m
  WHERE m.user_id = k.v->>0 AND m.event_id = CAST(k.v->>1 AS BIGINT) AND m.bundle_base
  FOR UPDATE) b
JOIN inbox_types ty ON ty.id = b.type_id""")
# PostgreSQL: the (user, display hash) groups of ``:groups`` (a JSON array) stop having a base
# row: each group's base found by a probe of the (user, display hash) index, not by a plan of
# an IN list of row values (whose planning alone grew with the list: 12 ms a call in a batch,
# and a sequential scan where the table had no statistics yet). The caller holds those rows
# locked (read by BASES_AT, or written by its own unit), so they keep their ctid. A demoted
# row drops its group's summary: the new base carries it.
DEMOTE = text("""
UPDATE notifications SET bundle_base = false, group_count = NULL, group_actors = NULL
WHERE ctid = ANY(ARRAY(
  SELECT m.ctid FROM json_array_elements(CAST(:groups AS JSON)) AS k(v)
  CROSS JOIN LATERAL (SELECT ctid FROM notifications
                      WHERE user_id = k.v->>0 AND display_hash = CAST(k.v->>1 AS BIGINT)
                        AND bundle_base) m))""")
# PostgreSQL: the inbox_open rows of the (user, bundle) pairs of ``:pairs`` (a JSON array in
# key order), one probe of the primary key a pair, each locked as it is found (in the array's
# order), with the position each holds once locked
LOCK_PAIRS = text("""
SELECT l.user_id, l.bundle_hash, l.created_at, l.event_id
FROM json_array_elements(CAST(:pairs AS JSON)) AS k(v)
CROSS JOIN LATERAL (SELECT user_id, bundle_hash, created_at, event_id FROM inbox_open
                    WHERE user_id = k.v->>0 AND bundle_hash = CAST(k.v->>1 AS BIGINT)
                    LIMIT 1 FOR UPDATE) l""")
# PostgreSQL: each (user, bundle) pair of the JSON arrays ``:ou``, ``:oh`` takes the position
# (``:oc``, ``:oe``) where it is newer than the one held (or none is); part of the statement
# that inserts the new rows (``cap.insert_and_register``)
OPEN = text("""
INSERT INTO inbox_open (user_id, bundle_hash, created_at, event_id)
SELECT u, CAST(h AS BIGINT), CAST(c AS BIGINT), CAST(e AS BIGINT)
FROM ROWS FROM (json_array_elements_text(CAST(:ou AS JSON)),
                json_array_elements_text(CAST(:oh AS JSON)),
                json_array_elements_text(CAST(:oc AS JSON)),
                json_array_elements_text(CAST(:oe AS JSON))) AS r(u, h, c, e)
ON CONFLICT (user_id, bundle_hash) DO UPDATE
SET created_at = excluded.created_at, event_id = excluded.event_id
WHERE inbox_open.created_at IS NULL
   OR (inbox_open.created_at, inbox_open.event_id) < (excluded.created_at, excluded.event_id)""")


def demote(db: Database, conn: Connection, groups: Sequence[tuple[str, str]]) -> None:
    """PostgreSQL: :data:`DEMOTE` of these (user, display hash) groups."""
    if groups:
        db.run(conn, DEMOTE, {"groups": json.dumps(pairs_to_sql(groups))})


def lock_pairs(db: Database, conn: Connection, pairs: Sequence[Pair]
               ) -> tuple[dict[Pair, Position | None], dict[Pair, BundleBase]]:
    """Hold the decider locks of these (user, bundle) pairs until the unit ends, taken in key
    order (user, then bundle: for one bundle, the users' order, as every unit takes them); each
    pair's newest base position as its row says once locked (None: the bundle has no base),
    and the base rows at those positions, locked where the backend locks rows."""
    wanted = sorted(set(pairs))
    if not wanted:
        return {}, {}
    if db.backend != "postgresql":
        if db.backend == "mysql":
            upsert = mysql_dialect.insert(inbox_open)
            upsert = upsert.on_duplicate_key_update(bundle_hash=upsert.inserted.bundle_hash)
            for start in range(0, len(wanted), 1000):
                conn.execute(upsert, [{"user_id": u, "bundle_hash": h}
                                      for u, h in wanted[start:start + 1000]])
        return below(db, conn, *open_bases(db, conn, wanted))
    found: dict[Pair, Position | None] = {}
    missing = wanted
    while missing:
        db.insert_many(conn, inbox_open, [{"user_id": u, "bundle_hash": h} for u, h in missing],
                       ignore=True)
        for start in range(0, len(missing), IN_LIST):
            part = missing[start:start + IN_LIST]  # each pair locked in this (key) order
            for user, bundle, created_at, event_id in db.fetch(
                    conn, LOCK_PAIRS, {"pairs": json.dumps(pairs_to_sql(part))}):
                found[(user, from_sql(bundle))] = (
                    None if event_id is None else (created_at, event_id))
        # A row deleted while this unit waited for it (its bundle's last base went) is not
        # returned locked: make it again and lock it.
        missing = [p for p in missing if p not in found]
    return below(db, conn, found, bases_at(db, conn, found))


def below(db: Database, conn: Connection, held: dict[Pair, Position | None],
          bases: dict[Pair, BundleBase]) -> tuple[dict[Pair, Position | None],
                                                  dict[Pair, BundleBase]]:
    """``held`` and ``bases``, with the base of each pair whose position holds no base row
    (a demotion that no new base followed: ``InboxStore.demote`` on its own) read below it."""
    for (user, bundle), at in sorted(held.items()):
        if at is not None and (user, bundle) not in bases:
            base = newest_before(db, conn, user, bundle, at)
            if base is not None:
                bases[(user, bundle)] = base
    return held, bases


def open_bases(db: Database, conn: Connection, pairs: Sequence[Pair]
               ) -> tuple[dict[Pair, Position | None], dict[Pair, BundleBase]]:
    """SQLite, MariaDB/MySQL: the ``inbox_open`` rows of these (user, bundle) pairs (sorted)
    with the base rows at their positions, in one read a part of :data:`BATCH` pairs (a
    locking read on MariaDB: the newest committed versions, locked)."""
    found: dict[Pair, Position | None] = {}
    bases: dict[Pair, BundleBase] = {}
    joined = inbox_open.outerjoin(notifications, and_(
        n.user_id == o.user_id, n.event_id == o.event_id, n.bundle_base == true()))
    for start in range(0, len(pairs), BATCH):
        query = (select(o.user_id, o.bundle_hash, o.created_at, o.event_id, *BASE_COLUMNS)
                 .select_from(joined)
                 .where(tuple_(o.user_id, o.bundle_hash).in_(list(pairs[start:start + BATCH])))
                 .order_by(o.user_id, o.bundle_hash))
        if db.skip_locked:
            query = query.with_for_update()
        for row in conn.execute(query):
            pair = (row[0], row[1])
            found[pair] = None if row[3] is None else (row[2], row[3])
            if row[6] is not None:  # the base row's event id
                bases[pair] = base_of(row[4:])
    return found, bases


def positions(db: Database, conn: Connection, pairs: Sequence[Pair]
              ) -> dict[Pair, Position | None]:
    """The ``inbox_open`` rows of these (user, bundle) pairs (sorted), locked in that order
    where the backend locks rows: each one's newest base position (None: a row with none)."""
    found: dict[Pair, Position | None] = {}
    for start in range(0, len(pairs), BATCH):
        query = (select(o.user_id, o.bundle_hash, o.created_at, o.event_id)
                 .where(tuple_(o.user_id, o.bundle_hash).in_(list(pairs[start:start + BATCH])))
                 .order_by(o.user_id, o.bundle_hash))
        if db.skip_locked:
            query = query.with_for_update()
        for r in conn.execute(query):
            found[(r.user_id, r.bundle_hash)] = (
                None if r.event_id is None else (r.created_at, r.event_id))
    return found


def bases_at(db: Database, conn: Connection, places: Mapping[Pair, Position | None]
             ) -> dict[Pair, BundleBase]:
    """The base rows at these pairs' positions (by primary key), locked where the backend
    locks rows (PostgreSQL: one probe a pair, prepared once; elsewhere a part of
    :data:`BATCH` pairs at a time). The caller holds the pairs' decider locks."""
    wanted = sorted((user, at[1]) for (user, _), at in places.items() if at is not None)
    if not wanted:
        return {}
    if db.backend == "postgresql":
        found: Any = [(from_sql(r[0]), r[1], r[2], from_sql(r[3]), *r[4:]) for r in db.fetch(
            conn, BASES_AT, {"places": json.dumps(wanted)})]
    else:
        found = []
        for start in range(0, len(wanted), BATCH):
            query = select(*BASE_COLUMNS).where(
                tuple_(n.user_id, n.event_id).in_(wanted[start:start + BATCH]),
                n.bundle_base == true())
            if db.skip_locked:
                query = query.with_for_update()
            found += conn.execute(query).all()
    return {(row[1], row[0]): base_of(row) for row in found if (row[1], row[0]) in places}


def newest_before(db: Database, conn: Connection, user: str, bundle: str, before: Position
                  ) -> BundleBase | None:
    """The user's newest base row of ``bundle`` strictly before ``before``, locked where the
    backend locks rows: the user's base rows read newest first through the (user, base,
    created_at, event id) index, each checked for the bundle (a back-fill's decision or a
    bundle whose newest base went: rare, bounded by the user's inbox cap)."""
    row = conn.execute(newest_before_query(user, bundle, before, db.backend)).first()
    return None if row is None else base_of(row)


def newest_before_query(user: str, bundle: str, before: Position, backend: str
                        ) -> Select[Any]:
    """:func:`newest_before`'s statement on ``backend``: the place as a range of the index
    (PostgreSQL compares the row value in the index; elsewhere the date bounds the range)."""
    place = (tuple_(n.created_at, n.event_id) < tuple_(*before) if backend == "postgresql"
             else and_(n.created_at <= before[0], before_place(before)))
    query = (select(*BASE_COLUMNS)
             .where(n.user_id == user, n.bundle_base == true(), place, n.bundle_hash == bundle)
             .order_by(n.created_at.desc(), n.event_id.desc()).limit(1))
    return query.with_for_update() if backend in ("postgresql", "mysql") else query


def base_of(row: Sequence[Any]) -> BundleBase:
    """The bundle base of a row of :data:`BASE_COLUMNS`."""
    (user, event_id, display, created_at, fresh_at, read_at, type_, category, section,
     joined, actor, count, actors, flags) = row[1:15]
    return BundleBase(user, event_id, display, created_at, fresh_at, read_at, type_, category,
                      section, groupsummary.decode(joined, actor, count, actors), flags)


def newest_positions(rows: Sequence[NewNotification]) -> dict[Pair, Position]:
    """Per (user, bundle) pair of these new rows (each a base), the newest one's position; a
    type that never bundles (its bundle hash is its event's own) has none."""
    alone: dict[tuple[str, int], bool] = {}
    newest: dict[Pair, Position] = {}
    for row in rows:
        bundle, event_id = row.bundle_hash, row.event_id
        own = alone.get((bundle, event_id))
        if own is None:
            own = alone[(bundle, event_id)] = bundles_alone(bundle, event_id)
        if own:
            continue
        pair, at = (row.user_id, bundle), (row.created_at, event_id)
        if pair not in newest or at > newest[pair]:
            newest[pair] = at
    return newest


def open_params(newest: Mapping[Pair, Position]) -> dict[str, Any]:
    """PostgreSQL: :data:`OPEN`'s parameters for these pairs' positions, in key order."""
    pairs = sorted(newest)
    return {"ou": json.dumps([u for u, _ in pairs]),
            "oh": json.dumps([to_sql(h) for _, h in pairs]),
            "oc": json.dumps([newest[p][0] for p in pairs]),
            "oe": json.dumps([newest[p][1] for p in pairs])}


def open_rows(db: Database, conn: Connection, newest: Mapping[Pair, Position]) -> None:
    """Each of these (user, bundle) pairs takes its position (a new base row's) where it is
    newer than the one held, or none is (on PostgreSQL the insert of the rows does it:
    :data:`OPEN` is part of its statement)."""
    pairs = sorted(newest)
    if not pairs:
        return
    if db.backend == "postgresql":
        db.run(conn, OPEN, open_params(newest))
        return
    values = [{"user_id": u, "bundle_hash": h, "created_at": newest[(u, h)][0],
               "event_id": newest[(u, h)][1]} for u, h in pairs]
    if db.backend == "mysql":
        my = mysql_dialect.insert(inbox_open)
        newer = or_(o.created_at.is_(None), tuple_(o.created_at, o.event_id) < tuple_(
            my.inserted.created_at, my.inserted.event_id))
        # in this order: the event id is set while the row still holds its old date, which
        # the date's condition then reads with the new event id (the same answer)
        statement: Any = my.on_duplicate_key_update([
            ("event_id", case((newer, my.inserted.event_id), else_=o.event_id)),
            ("created_at", case((newer, my.inserted.created_at), else_=o.created_at))])
    else:
        lite = sqlite_dialect.insert(inbox_open)
        statement = lite.on_conflict_do_update(
            index_elements=[o.user_id, o.bundle_hash],
            set_={"created_at": lite.excluded.created_at, "event_id": lite.excluded.event_id},
            where=or_(o.created_at.is_(None), tuple_(o.created_at, o.event_id) < tuple_(
                lite.excluded.created_at, lite.excluded.event_id)))
    for start in range(0, len(values), 1000):  # as many as a lock statement takes
        conn.execute(statement, values[start:start + 1000])


def close_unopened(conn: Connection, pairs: Sequence[Pair]) -> None:
    """Delete the rows without a position of these pairs: made to be locked, but the unit
    wrote no base for them."""
    wanted = sorted(set(pairs))
    for start in range(0, len(wanted), BATCH):
        conn.execute(delete(inbox_open).where(
            tuple_(o.user_id, o.bundle_hash).in_(wanted[start:start + BATCH]),
            o.created_at.is_(None)))


def before_removal(db: Database, conn: Connection, keys: Sequence[tuple[str, int]]
                   ) -> dict[Pair, Position]:
    """Before the base rows at these (user, event id) keys go: the pairs of their bundles,
    their ``inbox_open`` rows locked in key order (as fan-out takes them), with the positions
    they hold."""
    pairs: set[Pair] = set()
    for start in range(0, len(keys), BATCH):
        pairs.update((r.user_id, r.bundle_hash) for r in conn.execute(
            select(n.user_id, n.event_id, n.bundle_hash)
            .where(tuple_(n.user_id, n.event_id).in_(list(keys[start:start + BATCH])),
                   n.bundle_base == true()))
            if not bundles_alone(r.bundle_hash, r.event_id))
    if not pairs:
        return {}
    return {pair: at for pair, at in positions(db, conn, sorted(pairs)).items()
            if at is not None}


def reopen(db: Database, conn: Connection, held: Mapping[Pair, Position],
           gone: set[tuple[str, int]]) -> None:
    """After the rows at the (user, event id) keys ``gone`` went (and their groups' next
    newest members took their place as bases): each pair of ``held`` whose newest base was one
    of them takes the next newest base of its bundle (a base is its group's newest member, so
    it is older), or loses its row if none is left."""
    for (user, bundle), at in sorted(held.items()):
        if (user, at[1]) not in gone:
            continue
        base = newest_before(db, conn, user, bundle, at)
        where = (o.user_id == user, o.bundle_hash == bundle)
        if base is None:
            conn.execute(delete(inbox_open).where(*where))
        else:
            conn.execute(update(inbox_open).where(*where).values(
                created_at=base.created_at, event_id=base.event_id))
