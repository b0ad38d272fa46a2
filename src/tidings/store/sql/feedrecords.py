"""What a hot store's feeds read and write in a SQL unit (:class:`tidings.ports.hot.FeedRecords`):
the events' columns by id, the users delivered to, the journal of the feeds' writes."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Select, bindparam, select

from tidings.domain.views import TimelineEntry
from tidings.ports.hot import Fold
from tidings.store.sql import journal
from tidings.store.sql.core.database import Database
from tidings.store.sql.inbox import cap as inboxcap
from tidings.store.sql.schema import events

IN_LIST = 1000

# The reads by event id of every page: up to FETCHED ids (a page's), a statement of their
# own per number of ids, built and compiled once and run straight on the driver
# (Database.fetch: nothing compiled or wrapped per call); more ids (a rebuild, an unfollow)
# go through SQLAlchemy's expanding IN.
FETCHED = 64
PAYLOADS = ("id", "payload")
BODIES = ("id", "type", "actor", "object", "payload", "created_at")
ACTORS = ("id", "actor")


@functools.lru_cache(maxsize=4 * (FETCHED + 1))  # every (columns, count): none is dropped
def _by_ids_select(columns: tuple[str, ...], live: bool, count: int | None) -> Select[Any]:
    """The read of ``count`` ids (``i0``, ``i1``, …), or of any number (``ids``, expanding)."""
    ids = (events.c.id.in_(bindparam("ids", expanding=True)) if count is None
           else events.c.id.in_([bindparam(f"i{k}") for k in range(count)]))
    query = select(*(events.c[name] for name in columns)).where(ids)
    return query.where(events.c.retracted_at.is_(None)) if live else query


class SqlFeedRecords:
    """The feeds' reads and writes on one unit's connection."""

    def __init__(self, db: Database, conn: Connection) -> None:
        self.db = db
        self.conn = conn

    def _by_ids(self, columns: tuple[str, ...], ids: Sequence[int], *, live: bool = False
                ) -> list[Any]:
        """Rows of ``columns`` (the id first) of the events of these ids (``live``: not
        retracted), unpacked as tuples, at most IN_LIST ids a statement."""
        if 0 < len(ids) <= FETCHED:
            return self.db.fetch(self.conn, _by_ids_select(columns, live, len(ids)),
                                 {f"i{k}": i for k, i in enumerate(ids)})
        found: list[Any] = []
        for start in range(0, len(ids), IN_LIST):
            found += self.conn.execute(_by_ids_select(columns, live, None),
                                       {"ids": list(ids[start:start + IN_LIST])}).all()
        return found

    def payloads(self, ids: Sequence[int]) -> dict[int, str]:
        return {i: payload for i, payload in self._by_ids(PAYLOADS, ids)}

    def bodies(self, ids: Sequence[int]) -> dict[int, TimelineEntry]:
        return {i: TimelineEntry(id=i, type=t, actor=a, object=o, payload=json.loads(p),
                                 created_at=c)
                for i, t, a, o, p, c in self._by_ids(BODIES, ids, live=True)}

    def actors(self, ids: Sequence[int]) -> dict[int, str | None]:
        return {i: actor for i, actor in self._by_ids(ACTORS, ids)}

    def register(self, written: Sequence[tuple[str, int]]) -> None:
        inboxcap.register(self.db, self.conn, written)

    def journal(self, writes: str) -> None:
        journal.append(self.conn, writes)

    def compact(self, now: int, fold: Fold) -> int:
        return journal.compact(self.conn, now, fold)

    def fold_all(self, fold: Fold, *, naming: str) -> int:
        return journal.fold_all(self.conn, fold, naming=naming)
