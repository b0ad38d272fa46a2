"""The newest base row of many (user, bundle) pairs at once: what a fan-out batch's bundled
events decide against (``InboxStore.bundle_bases`` of many bundles), read in one statement;
and on PostgreSQL the demotion of the groups they join."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select, text, true, tuple_

from tidings.domain.views import BundleBase
from tidings.store.sql import groupsummary
from tidings.store.sql.database import Database
from tidings.store.sql.schema import notifications

n = notifications.c
BATCH = 500
# a bundle base's columns as BundleBase takes them, after its bundle hash, then what it says
# of its group (groupsummary.decode's arguments)
BASE_COLUMNS = (n.bundle_hash, n.user_id, n.event_id, n.display_hash, n.created_at, n.fresh_at,
                n.read_at, n.type, n.category, n.section, *groupsummary.COLUMNS)
# PostgreSQL: the newest base row of each (user, bundle) pair of ``:pairs`` (a JSON array),
# locked: one probe of the (user, bundle) index a pair
BASES_OF_PAIRS = text("""
SELECT b.bundle_hash, b.user_id, b.event_id, b.display_hash, b.created_at, b.fresh_at,
       b.read_at, b.type, b.category, b.section, b.joined, b.actor, b.group_count, b.group_actors
FROM json_array_elements(CAST(:pairs AS JSON)) AS k(v)
CROSS JOIN LATERAL (
  SELECT * FROM notifications m
  WHERE m.user_id = k.v->>0 AND m.bundle_hash = k.v->>1 AND m.bundle_base
  ORDER BY m.created_at DESC, m.event_id DESC LIMIT 1 FOR UPDATE) b""")
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
                      WHERE user_id = k.v->>0 AND display_hash = k.v->>1 AND bundle_base) m))""")


def demote(db: Database, conn: Connection, groups: Sequence[tuple[str, str]]) -> None:
    """PostgreSQL: :data:`DEMOTE` of these (user, display hash) groups."""
    if groups:
        db.run(conn, DEMOTE, {"groups": json.dumps(list(groups))})


def of_pairs(db: Database, conn: Connection, pairs: Sequence[tuple[str, str]]
             ) -> dict[tuple[str, str], BundleBase]:
    """Per (user, bundle) pair that has one, its newest base row, locked where the backend
    locks rows (PostgreSQL: one probe a pair, prepared once; elsewhere a part of
    :data:`BATCH` pairs at a time). The caller holds the pairs' decider locks."""
    wanted = sorted(set(pairs))
    if db.backend == "postgresql":
        found: Any = db.fetch(conn, BASES_OF_PAIRS, {"pairs": json.dumps(wanted)})
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
