"""The hot store's journal in SQL (``hot_journal``), and the watermarks copied beside it.

A hot store (``tidings.store.hot``) journals every unit's feed writes in the unit's own SQL
transaction, so that a feed store that lost its data is rebuilt from here
(``tidings.store.redis.journal`` replays the rows; ``docs/redis.md``). The rows' format is
the port's (:mod:`tidings.ports.hot`): this module keeps them in order, writes the baseline
and checkpoints, and stores the snapshot that replaces older rows.

Rows older than a day or two are folded by the retention job (:func:`compact`, in its unit):
at most once a day (by the store's clock) it writes a *checkpoint* row, and replaces every
row before the previous checkpoint (a day old, so no unit that journaled before it is still
running) by the snapshot of the state they make, as ``{"snapshot": [...]}`` rows with the
lowest ids. A rebuild replays the snapshot, then the rows after it: the same state as
replaying every row. The journal then holds the state of a day ago (bounded like the feeds
themselves, by retention and the caps) and a day or two of units.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from tidings.domain.readstate import POSITION
from tidings.ports.hot import BASELINE, CHECKPOINT, SNAPSHOT, Fold, SnapshotPart, Watermark
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import events, hot_journal, read_markers

PAGE = 500  # journal rows read at once
MARKS = 1000  # watermarks read at once
DAY_US = 86_400 * 1_000_000
EVERY = DAY_US  # the time between checkpoints (store clock, µs)


def wall_clock_us() -> int:
    # the wall clock, not the store's: a row's time is for people reading the journal, and
    # the store's clock (a test's frozen one ticks on every reading) dates what tidings shows
    return time.time_ns() // 1000


def append(conn: Connection, writes: str) -> None:
    """Journal a unit's writes, in the unit's transaction."""
    conn.execute(insert(hot_journal).values(written_at=wall_clock_us(), writes=writes))


def checkpoints(conn: Connection) -> list[tuple[int, int]]:
    """(row id, store time) of every checkpoint, oldest first. A checkpoint's
    ``written_at`` is minus its store time (every other row's is a positive wall clock):
    found without reading any row's writes."""
    j = hot_journal.c
    rows = conn.execute(select(j.id, j.written_at).where(j.written_at < 0).order_by(j.id)).all()
    return [(row.id, -row.written_at) for row in rows]


def compact(conn: Connection, now: int, fold: Fold) -> int:
    """Once a day (``now`` a day past the newest checkpoint, or none yet): fold the rows
    before the newest checkpoint into a snapshot, then write a checkpoint. Runs in the
    caller's unit (``conn``); returns how many rows went."""
    marks = checkpoints(conn)
    if marks and marks[-1][1] > now - EVERY:
        return 0
    gone = _fold(conn, marks[-1][0], fold) if marks else 0
    conn.execute(insert(hot_journal).values(written_at=-now,
                                            writes=json.dumps({CHECKPOINT: now})))
    return gone


def fold_all(conn: Connection, fold: Fold, *, naming: str) -> int:
    """Replace every row by the snapshot of the state they make (an erasure's ``fold``,
    which leaves a person out), in the caller's unit, if any row holds the text ``naming``
    (none does: nothing to fold, as for a user never delivered to); the newest checkpoint's
    time is written again after it, so the daily compaction keeps its pace. Returns how
    many rows went."""
    j = hot_journal.c
    escaped = naming.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    if conn.execute(select(j.id).where(j.writes.like(f"%{escaped}%", escape="\\"))
                    .limit(1)).first() is None:
        return 0
    ids = list(conn.execute(select(j.id).order_by(j.id)).scalars())
    marks = checkpoints(conn)
    with fold(_rows(conn, ids[-1] + 1)) as (baseline, parts):
        kept = _store(conn, ids, baseline, parts)
    # the rows that hold the snapshot are no checkpoints now (a checkpoint's time is negative)
    conn.execute(update(hot_journal).where(j.id <= ids[kept - 1])
                 .values(written_at=wall_clock_us()))
    conn.execute(delete(hot_journal).where(j.id > ids[kept - 1], j.id <= ids[-1]))
    if marks:
        at = marks[-1][1]
        conn.execute(insert(hot_journal).values(written_at=-at,
                                                writes=json.dumps({CHECKPOINT: at})))
    return len(ids) - kept


def _fold(conn: Connection, upto: int, fold: Fold) -> int:
    """Replace the rows before row ``upto`` by the snapshot of the state they make."""
    j = hot_journal.c
    ids = list(conn.execute(select(j.id).where(j.id < upto).order_by(j.id)).scalars())
    if len(ids) < 2:
        return 0  # a snapshot alone (or nothing) already
    with fold(_rows(conn, upto)) as (baseline, parts):
        kept = _store(conn, ids, baseline, parts)
    conn.execute(delete(hot_journal).where(j.id > ids[kept - 1], j.id < upto))
    return len(ids) - kept


def _rows(conn: Connection, upto: int) -> Iterator[str]:
    """The writes of the rows before row ``upto``, in order, PAGE rows a read."""
    j = hot_journal.c
    after = 0
    while True:
        rows = conn.execute(select(j.id, j.writes).where(j.id > after, j.id < upto)
                            .order_by(j.id).limit(PAGE)).all()
        if not rows:
            return
        for row in rows:
            yield row.writes
        after = rows[-1].id


def _store(conn: Connection, ids: list[int], baseline: int,
           parts: Iterator[SnapshotPart]) -> int:
    """Write the snapshot's parts over the rows of ``ids``, in order (few rows that made many
    keys: the last row takes the rest); returns how many rows hold it."""
    def write(n: int, part: SnapshotPart) -> None:
        head: dict[str, Any] = {BASELINE: baseline} if n == 0 else {}
        conn.execute(update(hot_journal).where(hot_journal.c.id == ids[n])
                     .values(writes=json.dumps({**head, SNAPSHOT: part},
                                               separators=(",", ":"))))

    n, held = 0, None
    for part in parts:
        if held is None:
            held = part
        elif n < len(ids) - 1:
            write(n, held)
            n, held = n + 1, part
        else:
            held += part
    write(n, held or [])
    return n + 1


class SqlJournal:
    """:class:`tidings.ports.hot.FeedJournal` of a SQL store: each call its own transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def adopt(self) -> bool:
        with self.db.write() as conn:
            if conn.execute(select(hot_journal.c.id).limit(1)).first() is not None:
                return False
            newest = conn.execute(select(func.max(events.c.id))).scalar() or 0
            conn.execute(insert(hot_journal).values(
                written_at=wall_clock_us(), writes=json.dumps({BASELINE: int(newest)})))
        return True

    def replay(self, apply: Callable[[str], None]) -> None:
        after = 0
        while True:
            with self.db.read() as conn:
                rows = conn.execute(select(hot_journal.c.id, hot_journal.c.writes)
                                    .where(hot_journal.c.id > after)
                                    .order_by(hot_journal.c.id).limit(PAGE)).all()
            if not rows:
                return
            for row in rows:
                apply(row.writes)
            after = rows[-1].id

    def newest_checkpoint(self) -> int:
        with self.db.read() as conn:
            marks = checkpoints(conn)
        return marks[-1][0] if marks else 0

    def watermarks(self) -> Iterator[list[Watermark]]:
        after = ("", "")
        m = read_markers.c
        while True:
            with self.db.read() as conn:
                rows = conn.execute(
                    select(m.user_id, m.scope, m.until_at, m.position_at, m.position_id)
                    .where((m.user_id > after[0])
                           | ((m.user_id == after[0]) & (m.scope > after[1])))
                    .order_by(m.user_id, m.scope).limit(MARKS)).all()
            if not rows:
                return
            yield [Watermark(r.user_id, r.scope, r.until_at,
                             (r.position_at, r.position_id)
                             if r.scope == POSITION and r.position_at is not None else None)
                   for r in rows]
            after = (rows[-1].user_id, rows[-1].scope)
