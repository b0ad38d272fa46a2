"""Fan-out's join-or-start decision per (user, bundle) on SQL: the locks that serialise it,
the newest base rows it decides against, and the demotion of the groups joined.

The newest base row of many (user, bundle) pairs at once (``InboxStore.bundle_bases`` of many
bundles) is read in one statement; on PostgreSQL the groups they join are demoted in one.

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
from typing import Any

from sqlalchemy import Connection, delete, select, text, true, tuple_
from sqlalchemy.dialects import mysql as mysql_dialect

from tidings.clock import Clock
from tidings.domain.views import BundleBase
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.hashes import from_sql, pairs_to_sql
from tidings.store.sql.inbox import groups as groupsummary
from tidings.store.sql.inbox import types as inboxtypes
from tidings.store.sql.schema import bundle_locks, notifications

n = notifications.c
BATCH = 500
# a bundle base's columns as BundleBase takes them, after its bundle hash, then what it says
# of its group (groupsummary.decode's arguments); its type's names from the types dictionary,
# by subqueries: a locking read locks the base rows only, never a type's row (which every
# delivery of the type reads)
BASE_COLUMNS = (n.bundle_hash, n.user_id, n.event_id, n.display_hash, n.created_at, n.fresh_at,
                n.read_at, *inboxtypes.NAMES_OF_ROW, *groupsummary.COLUMNS)
# PostgreSQL: the newest base row of each (user, bundle) pair of ``:pairs`` (a JSON array),
# locked (the base rows, not their types' rows): one probe of the (user, bundle) index a pair
BASES_OF_PAIRS = text("""
SELECT b.bundle_hash, b.user_id, b.event_id, b.display_hash, b.created_at, b.fresh_at,
       b.read_at, ty.name, ty.category, ty.section, b.joined, b.actor, b.group_count,
       b.group_actors
FROM json_array_elements(CAST(:pairs AS JSON)) AS k(v)
CROSS JOIN LATERAL (
  SELECT * FROM notifications m
  WHERE m.user_id = k.v->>0 AND m.bundle_hash = CAST(k.v->>1 AS BIGINT) AND m.bundle_base
  ORDER BY m.created_at DESC, m.event_id DESC LIMIT 1 FOR UPDATE) b
JOIN inbox_types ty ON ty.id = b.type_id""")
# PostgreSQL: the (user, display hash) groups of ``:groups`` (a JSON array) stop having a base
# row: each group's base found by a probe of the (user, display hash) index, not by a plan of
# an IN list of row values (whose planning alone grew with the list: 12 ms a call in a batch,
# and a sequential scan where the table had no statistics yet). The caller holds those rows
# locked (read by BASES_OF_PAIRS, or written by its own unit), so they keep their ctid. A
# demoted row drops its group's summary: the new base carries it.
DEMOTE = text("""
UPDATE notifications SET bundle_base = false, group_count = NULL, group_actors = NULL
WHERE ctid = ANY(ARRAY(
  SELECT m.ctid FROM json_array_elements(CAST(:groups AS JSON)) AS k(v)
  CROSS JOIN LATERAL (SELECT ctid FROM notifications
                      WHERE user_id = k.v->>0 AND display_hash = CAST(k.v->>1 AS BIGINT)
                        AND bundle_base) m))""")


def demote(db: Database, conn: Connection, groups: Sequence[tuple[str, str]]) -> None:
    """PostgreSQL: :data:`DEMOTE` of these (user, display hash) groups."""
    if groups:
        db.run(conn, DEMOTE, {"groups": json.dumps(pairs_to_sql(groups))})


def of_pairs(db: Database, conn: Connection, pairs: Sequence[tuple[str, str]]
             ) -> dict[tuple[str, str], BundleBase]:
    """Per (user, bundle) pair that has one, its newest base row, locked where the backend
    locks rows (PostgreSQL: one probe a pair, prepared once; elsewhere a part of
    :data:`BATCH` pairs at a time). The caller holds the pairs' decider locks."""
    wanted = sorted(set(pairs))
    if db.backend == "postgresql":
        found: Any = [(from_sql(r[0]), r[1], r[2], from_sql(r[3]), *r[4:]) for r in db.fetch(
            conn, BASES_OF_PAIRS, {"pairs": json.dumps(pairs_to_sql(wanted))})]
    else:
        found = []
        for start in range(0, len(wanted), BATCH):
            query = select(*BASE_COLUMNS).where(
                tuple_(n.user_id, n.bundle_hash).in_(wanted[start:start + BATCH]),
                n.bundle_base == true())
            if db.skip_locked:
                query = query.with_for_update()
            found += conn.execute(query).all()
    bases: dict[tuple[str, str], BundleBase] = {}
    for row in found:
        base = base_of(row)
        key = (base.user_id, row[0])
        newest = bases.get(key)
        if newest is None or (base.created_at, base.event_id) > (
                newest.created_at, newest.event_id):
            bases[key] = base
    return bases


def base_of(row: Sequence[Any]) -> BundleBase:
    """The bundle base of a row of :data:`BASE_COLUMNS`."""
    (user, event_id, display, created_at, fresh_at, read_at, type_, category, section,
     joined, actor, count, actors) = row[1:14]
    return BundleBase(user, event_id, display, created_at, fresh_at, read_at, type_, category,
                      section, groupsummary.decode(joined, actor, count, actors))


IN_LIST = 5000
b = bundle_locks.c
# PostgreSQL: the lock rows of the (user, bundle) pairs of ``:pairs`` (a JSON array in key
# order), one probe of the primary key a pair, each locked as it is found: in the array's order
LOCK_PAIRS = text("""
SELECT l.user_id, l.bundle_hash FROM json_array_elements(CAST(:pairs AS JSON)) AS k(v)
CROSS JOIN LATERAL (SELECT user_id, bundle_hash FROM bundle_locks
                    WHERE user_id = k.v->>0 AND bundle_hash = CAST(k.v->>1 AS BIGINT)
                    LIMIT 1 FOR UPDATE) l""")


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
            locked.update((r[0], from_sql(r[1])) for r in db.fetch(
                conn, LOCK_PAIRS, {"pairs": json.dumps(pairs_to_sql(part))}))
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
