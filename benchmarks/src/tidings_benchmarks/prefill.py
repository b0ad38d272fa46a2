"""W3's populated inboxes: before the timed rounds each follower already holds about
``--prefill`` notifications on every side, so that a round's fan-out writes into populated
tables and indexes, as on a running site, not into empty ones (issue 40: ~43-follower fan-out
ran 442 to 469 events/s on empty tables against 122 to 185 on a populated inbox).

The history is a list of past events (the actor of each, at a past time of its own). Each is
delivered into tidings' tables, which the baseline's statements write into too, by the raw
``INSERT … SELECT`` of :mod:`tidings_benchmarks.fanout_raw` (the rows tidings writes), and
into the lean layout's by its own fan-out (:meth:`LeanFanout.deliver_chunked`). Beside the
rows, tidings' side gets what its own fan-out keeps: each recipient's ``users`` row, the push
model's mailboxes (``timelines``: every entry held; ``timeline_state``: the
exact count, no floor) and each followee's ``timeline_sources`` row (pushed from the first
post). On both sides the oldest :data:`READ_SHARE` of the events are read.

Between rounds :func:`reset` removes what a round wrote (rows of events after the history;
every row of the other tables but the follow graph and the types), puts the counts back,
checks the history is whole, and on PostgreSQL vacuums, so each side's round meets the same
populated, vacuumed tables.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tidings_benchmarks import BenchFailure
from tidings_benchmarks.fanout_raw import RawFanout
from tidings_benchmarks.jobwait import KEEP_BETWEEN_ROUNDS
from tidings_benchmarks.lean_raw import READ, LeanFanout
from tidings_benchmarks.raw import RawConnection
from tidings_benchmarks.stores import BenchStore

DEFAULT_PER_FOLLOWER = 50
READ_SHARE = 0.30
# tidings' tables that hold the history between rounds
HISTORY_TABLES = ("events", "notifications", "deliveries", "users", "timelines",
                  "timeline_state", "timeline_sources")
_COUNT = "SELECT COUNT(*) FROM {}"


@dataclass(frozen=True)
class Prefilled:
    """What :func:`prefill` left, counted in the server after it."""

    per_follower: int
    events: int
    last_event: int  # tidings' id of the newest history event: later ones are a round's
    rows: int  # tidings' inbox rows (the baseline's table too)
    mailbox_rows: int  # tidings' push mailbox entries
    lean_rows: int | None  # the lean layout's group rows (None: no lean side)
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"per_follower": self.per_follower, "events": self.events, "rows": self.rows,
                "mailbox_rows": self.mailbox_rows, "lean_rows": self.lean_rows,
                "seconds": round(self.seconds, 2)}


def history(followers: dict[str, int], per_follower: int, rng: random.Random) -> list[str]:
    """Actors of past events, drawn at random from ``followers`` (actor to follower count)
    until the events reach ``per_follower`` rows per follower on average; one actor: that
    actor ``per_follower`` times."""
    if per_follower <= 0 or not followers:
        return []
    if len(followers) == 1:
        return list(followers) * per_follower
    actors = sorted(followers)
    goal = per_follower * len(actors)
    out: list[str] = []
    rows = 0
    while rows < goal:
        actor = rng.choice(actors)
        out.append(actor)
        rows += followers[actor]
    return out


def prefill(store: BenchStore, actors: Sequence[str], per_follower: int,
            lean: LeanFanout | None) -> Prefilled:
    """Deliver a past event of each of ``actors`` into every side's inboxes (the tables hold
    the follow graph and nothing delivered yet), then keep it there: see the module."""
    started = time.perf_counter()
    start = time.time_ns() // 1000 - len(actors) - 86_400_000_000  # a day before the rounds
    raw = RawFanout(store.url)
    try:
        for i, actor in enumerate(actors):
            raw.insert_select(actor, start + i)
            if lean is not None:
                lean.deliver_chunked(actor, start + i)
    finally:
        raw.close()
    with RawConnection(store.url, autocommit=False) as conn:
        last = int(conn.fetch("SELECT COALESCE(MAX(id), 0) FROM events")[0][0])
        read_up_to = start + round(len(actors) * READ_SHARE) - 1
        conn.execute(conn.sql("UPDATE notifications SET read_at = created_at + 1 "
                              "WHERE created_at <= %s"), (read_up_to,))
        conn.execute("INSERT INTO users (user_id, created_at) "
                     "SELECT user_id, MIN(created_at) FROM notifications GROUP BY user_id")
        conn.execute("INSERT INTO timelines (user_id, event_id, created_at) "
                     "SELECT user_id, event_id, created_at FROM notifications")
        _count_mailboxes(conn)
        _sources(conn)
        conn.commit()
        if lean is not None:
            conn.execute(conn.sql(f"UPDATE lean_inbox SET flags = flags | {READ} "
                                  "WHERE created_at <= %s"), (read_up_to,))
            conn.commit()
            lean.keep()
        done = Prefilled(per_follower, len(actors), last, _rows(conn, "notifications"),
                         _rows(conn, "timelines"),
                         _rows(conn, "lean_inbox") if lean is not None else None,
                         time.perf_counter() - started)
    store.analyze()
    return done


def reset(store: BenchStore, done: Prefilled, lean: LeanFanout | None) -> None:
    """Back to the history alone on every side (see the module); a :class:`BenchFailure` if
    a round removed any of it (a ``--prefill`` past a cap)."""
    store.empty_tables(keep=(*KEEP_BETWEEN_ROUNDS, *HISTORY_TABLES))
    if lean is not None:
        lean.empty()
    with RawConnection(store.url, autocommit=False) as conn:
        for table, column in (("notifications", "event_id"), ("deliveries", "event_id"),
                              ("timelines", "event_id"), ("events", "id")):
            conn.execute(conn.sql(f"DELETE FROM {table} WHERE {column} > %s"),
                         (done.last_event,))
        conn.execute("DELETE FROM users WHERE NOT EXISTS (SELECT 1 FROM notifications n "
                     "WHERE n.user_id = users.user_id)")
        conn.execute("DELETE FROM timeline_state")
        _count_mailboxes(conn)
        _sources(conn)
        conn.commit()
        held = (_rows(conn, "notifications"), _rows(conn, "timelines"),
                _rows(conn, "lean_inbox") if lean is not None else None)
    if held != (done.rows, done.mailbox_rows, done.lean_rows):
        raise BenchFailure(f"(inbox rows, mailbox rows, lean rows) {held} after a round for "
                           f"{(done.rows, done.mailbox_rows, done.lean_rows)} prefilled: a "
                           "round removed some of the history (--prefill past a cap?)")
    if store.backend == "postgresql":
        tables = (*HISTORY_TABLES, *(("lean_inbox", "lean_ev") if lean is not None else ()))
        with RawConnection(store.url, autocommit=True) as conn:
            conn.execute("VACUUM " + ", ".join(tables))


def _count_mailboxes(conn: RawConnection) -> None:
    conn.execute("INSERT INTO timeline_state (user_id, entries, floor_id, floor_at) "
                 "SELECT user_id, COUNT(*), 0, 0 FROM timelines GROUP BY user_id")


def _sources(conn: RawConnection) -> None:
    """Each followee's follower count, its posts pushed from the first (the push model)."""
    conn.execute("DELETE FROM timeline_sources")
    conn.execute("INSERT INTO timeline_sources (actor, followers, model, push_from, "
                 "push_from_at) SELECT followee, COUNT(*), NULL, 0, 0 FROM follows "
                 "GROUP BY followee")


def _rows(conn: RawConnection, table: str) -> int:
    return int(conn.fetch(_COUNT.format(table))[0][0])
