"""Push-model timelines (``TimelineStore`` on SQL): followers' mailboxes of events, keyed in
the timeline's order (user, created_at, event id).

``timeline_state`` keeps per mailbox an upper bound of its entries (raised by every push, set
exact by a trim; on PostgreSQL a push counts only the entries it added, so it stays exact) and
its floor. The cap is held by a high-water mark: :meth:`SqlTimeline.cap` trims only mailboxes
whose bound passes the mark, back to the cap, deleting their oldest entries and raising their
floor past them, in a few statements for all of them (:mod:`.cap`). A read with the cap
raises the floor it reads under to the newest entry beyond the newest ``cap`` (found from the
oldest end: at most the margin away), so it shows the newest ``cap`` and pulls the rest.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, case, delete, func, select, text, update

from tidings.domain.timeline import PULL, PUSH, START, Candidate, Position, ReadPlan
from tidings.domain.views import TimelineEntry
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import events, timeline_state, timelines
from tidings.store.sql.timeline import cap as timelinecap
from tidings.store.sql.timeline import reads as read
from tidings.store.sql.timeline.positions import compared, params

t = timelines.c
st = timeline_state.c
# the entries arrive as three JSON arrays, one text parameter each (timelinecap.entry_columns)
_PG_WRITE = text(f"""
WITH new AS ({timelinecap.ENTRIES_INSERT}
  RETURNING user_id
)
INSERT INTO timeline_state (user_id, entries, floor_id, floor_at)
SELECT user_id, count(*), 0, 0 FROM new GROUP BY user_id ORDER BY user_id
ON CONFLICT (user_id) DO UPDATE
SET entries = COALESCE(timeline_state.entries, 0) + EXCLUDED.entries
""")


class SqlTimeline:
    """The ``timelines`` table within one transaction."""

    def __init__(self, db: Database, conn: Connection,
                 prefetched: dict[tuple[str, str], Any] | None = None) -> None:
        self.db = db
        self.conn = conn
        # PostgreSQL's head() reads the reader's followees and mutes too, for SqlGraph
        self.prefetched = prefetched

    def push(self, event_id: int, users: Sequence[str], created_at: int) -> None:
        self._write([(user, event_id, created_at) for user in users])

    def push_many(self, entries: Sequence[tuple[int, Sequence[str], int]]) -> None:
        self._write([(user, event_id, at) for event_id, users, at in entries
                     for user in users])

    def push_capped(self, entries: Sequence[tuple[int, Sequence[str], int]], cap: int) -> None:
        rows = [(user, event_id, at) for event_id, users, at in entries for user in users]
        if self.db.backend == "postgresql":
            timelinecap.push_capped_pg(self.db, self.conn, rows, cap)
            return
        self._write(rows)
        self.cap(sorted({user for user, _, _ in rows}), cap)

    def fill(self, user: str, entries: Sequence[tuple[int, int]]) -> None:
        """(event id, created_at) entries into one mailbox (a back-fill)."""
        self._write([(user, i, at) for i, at in entries])

    def _write(self, rows: list[tuple[str, int, int]]) -> None:
        """Mailbox entries, and each mailbox's bound grown by as many."""
        if not rows:
            return
        if self.db.backend == "postgresql":  # one statement, the bounds grown by what was new
            self.db.run(self.conn, _PG_WRITE, timelinecap.entry_columns(rows))
            return
        self.db.insert_many(self.conn, timelines, [
            {"user_id": u, "event_id": i, "created_at": at} for u, i, at in rows], ignore=True)
        counts = Counter(u for u, _, _ in rows)
        self.db.add_rows(self.conn, timeline_state, ["user_id"], "entries", [
            {"user_id": u, "entries": counts[u], "floor_id": 0, "floor_at": 0}
            for u in sorted(counts)])

    def page(self, user: str, *, limit: int, before: Position | None,
             after: Position | None = None, cap: int | None = None) -> list[TimelineEntry]:
        if cap is not None:
            hidden = self._hidden(user, cap, self._state(user)[1])
            if hidden != START:
                after = max(after or START, hidden)
        rows = self.db.fetch(self.conn, read.page(False, before is not None,
                                                  after is not None, limit, self._rows),
                             read.bounds(user, before, after))
        return [TimelineEntry(id=r[0], type=r[1], actor=r[2], object=r[3],
                              payload=json.loads(r[4]), created_at=r[5]) for r in rows]

    @property
    def _rows(self) -> bool:
        return self.db.backend == "postgresql"

    def head(self, user: str, *, limit: int, before: Position | None,
             after: Position | None, cap: int | None = None
             ) -> tuple[Position, list[TimelineEntry]]:
        params = read.bounds(user, before, after)
        if self.db.backend == "postgresql" and self.prefetched is not None:
            # one statement: the page, then a row with the floor and the followees
            *rows, last = self.db.fetch(self.conn, read.pg_head(
                before is not None, after is not None, limit),
                {**params, "cap": read.cap_param(cap)})
            self.prefetched["followees", user] = json.loads(last[4])
            self.prefetched["mutes", user] = json.loads(last[3])
            floor = (int(last[6]), int(last[7]))
        else:  # the floor and the bound ride along in the page's statement; an empty page
            # reads them alone
            rows = self.db.fetch(self.conn, read.page(True, before is not None,
                                                      after is not None, limit, self._rows),
                                 params)
            if rows:
                floor, entries = (int(rows[0][6]), int(rows[0][7])), int(rows[0][8])
            else:
                floor, entries = self._state(user) if cap is not None else (self.floor(user), 0)
            if cap is not None and entries > cap:  # one more read: what the cap hides
                hidden = self._hidden(user, cap, entries)
                if hidden > floor:
                    floor = hidden
                    rows = [r for r in rows if (int(r[9]), int(r[0])) > hidden]
            if not rows:
                return floor, []
        return floor, [TimelineEntry(id=r[0], type=r[1], actor=r[2], object=r[3],
                                     payload=json.loads(r[4]), created_at=r[5]) for r in rows]

    def merged(self, user: str, plan: ReadPlan, *, limit: int, below: Position | None,
               above: Position | None
               ) -> tuple[list[Candidate], list[tuple[str, str]]] | None:
        if self.db.backend != "postgresql":
            return None  # no LATERAL on SQLite and MariaDB: the steps, each in one statement
        rows = self.db.fetch(self.conn, read.merged_statement(
            below is not None, above is not None, limit,
            "pulled" if plan.model == PULL else "pushed" if plan.model == PUSH else "sources"),
            read.merged_params(user, plan, below, above))
        return read.candidates(rows)

    def _state(self, user: str) -> tuple[Position, int]:
        """The mailbox's stored floor and the bound of its entries."""
        found = self.db.fetch(self.conn, read.STATE, {"user": user})
        if not found:
            return START, 0
        return (int(found[0][0] or 0), int(found[0][1] or 0)), int(found[0][2] or 0)

    def _hidden(self, user: str, cap: int, entries: int) -> Position:
        """The newest entry a read with ``cap`` does not show (:data:`START`: none), for a
        mailbox whose bound is ``entries``."""
        if entries <= cap:
            return START
        found = (self.db.fetch(self.conn, read.HIDDEN, {"user": user, "skip": entries - cap - 1})
                 or self.db.fetch(self.conn, read.NEWEST_HIDDEN, {"user": user, "skip": cap}))
        return (int(found[0][0]), int(found[0][1])) if found else START

    def trim(self, user: str, cap: int) -> int:
        boundary = self.conn.execute(
            select(t.created_at, t.event_id).where(t.user_id == user)
            .order_by(t.created_at.desc(), t.event_id.desc()).limit(1).offset(cap)
        ).first()
        removed = 0
        if boundary is not None:
            result = self.conn.execute(delete(timelines).where(
                t.user_id == user,
                compared("<=", t.created_at, t.event_id, "bound", rows=self._rows)),
                params("bound", (boundary[0], boundary[1])))
            removed = max(result.rowcount, 0)
            self.raise_floor(user, (int(boundary[0]), int(boundary[1])))
        left = self.conn.execute(select(func.count()).select_from(timelines)
                                 .where(t.user_id == user)).scalar_one()
        self.conn.execute(update(timeline_state).where(st.user_id == user)
                          .values(entries=left))
        return removed

    def cap(self, users: Sequence[str], cap: int) -> int:
        return timelinecap.cap(self.conn, users, cap)

    def floor(self, user: str) -> Position:
        found = self.db.fetch(self.conn, read.FLOOR, {"user": user})
        return (int(found[0][0] or 0), int(found[0][1] or 0)) if found else START

    def raise_floor(self, user: str, floor: Position) -> None:
        if floor <= self.floor(user):
            return
        self.conn.execute(self.db.upsert(timeline_state, ["user_id"], {
            "user_id": user, "entries": 0, "floor_at": floor[0], "floor_id": floor[1]},
            ["floor_at", "floor_id"]))

    def remove_source(self, user: str, actor: str) -> int:
        ids = select(events.c.id).where(events.c.actor == actor)
        gone = max(self.conn.execute(delete(timelines).where(
            t.user_id == user, t.event_id.in_(ids))).rowcount, 0)
        if gone:
            self.conn.execute(update(timeline_state).where(st.user_id == user).values(
                entries=case((st.entries > gone, st.entries - gone), else_=0)))
        return gone
