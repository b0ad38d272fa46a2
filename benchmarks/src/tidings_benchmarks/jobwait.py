"""Waiting on the job queue while worker processes fan out, without slowing them down.

"Every row written" is read off the job queue, not by counting notifications while the workers
run (a ``COUNT(*)`` over a million rows would compete with them for the CPU): a ``fanout_chunk``
job is deleted in the same transaction that writes its rows, and the ``fanout`` job is replaced
by its chunks atomically, so once no fan-out job is left every row is committed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import and_, distinct, func, select

from tidings.fanout.specs import FANOUT, FANOUT_CHUNK
from tidings_benchmarks import BenchFailure
from tidings_benchmarks.processes import WorkerProcesses
from tidings_benchmarks.sql import SqlDatabase, follows, jobs, notifications

# Emptied between rounds: everything but the follow graph and the types.
KEEP_BETWEEN_ROUNDS = ("follows", "event_types", "alembic_version")


def fanout_jobs_left(db: SqlDatabase) -> int:
    with db.read() as conn:
        return int(conn.execute(
            select(func.count()).select_from(jobs)
            .where(jobs.c.func.in_([FANOUT, FANOUT_CHUNK]))).scalar_one())


def wait_for_fanout(db: SqlDatabase, started: float, deadline: float, procs: WorkerProcesses,
                    what: str, on_poll: Callable[[int], None] | None = None) -> float:
    """Poll until no fan-out job is left; return the seconds since ``started``."""
    polls = 0
    while (left := fanout_jobs_left(db)) > 0:
        if on_poll is not None:
            on_poll(left)
        polls += 1
        if polls % 100 == 0:
            procs.check_alive()
        if time.monotonic() > deadline:
            raise BenchFailure(f"{what} not done in time")
        # Within 1 % of the elapsed time, without the poll itself taking the workers' CPU.
        time.sleep(min(0.02, max(0.002, (time.perf_counter() - started) / 100)))
    return time.perf_counter() - started


def wait_for_queue(db: SqlDatabase, deadline: float, procs: WorkerProcesses) -> None:
    """Let the workers finish what the round left (inbox-cap checks) before the next one."""
    while True:
        with db.read() as conn:
            if conn.execute(select(func.count()).select_from(jobs)).scalar_one() == 0:
                return
        procs.check_alive()
        if time.monotonic() > deadline:
            raise BenchFailure("the job queue did not drain")
        time.sleep(0.05)


def count_rows(db: SqlDatabase) -> int:
    """Every inbox row in the store (counted once a round is over)."""
    with db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(notifications)).scalar_one())


def delivered(db: SqlDatabase, actor: str, after: int = 0) -> dict[str, int]:
    """What one event to ``actor``'s followers left (counted once its round is over, in the
    server): inbox ``rows`` of events after the id ``after`` (the history's), distinct
    ``users`` among them, ``strangers`` (rows of users who do not follow ``actor``), and the
    followers' count ``due``. Nothing was lost or doubled when rows == users == due and
    strangers == 0."""
    n, f = notifications.c, follows.c
    joined = notifications.outerjoin(follows, and_(f.follower == n.user_id, f.followee == actor))
    with db.read() as conn:
        rows, users, known = conn.execute(select(
            func.count(), func.count(distinct(n.user_id)), func.count(f.follower))
            .select_from(joined).where(n.event_id > after)).one()
        due = conn.execute(select(func.count()).select_from(follows)
                           .where(f.followee == actor)).scalar_one()
    return {"rows": int(rows), "users": int(users), "strangers": int(rows) - int(known),
            "due": int(due)}
