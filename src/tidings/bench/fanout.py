"""W3 — fan-out (LiveJournal ESN): one event to N followers, delivered by W worker processes.

For each (followers, workers) pair the store is emptied and N follows of one actor are loaded
in bulk (``COPY`` on PostgreSQL, multi-row ``INSERT`` elsewhere). W ``tidings worker``
processes are started and left to reach their polling loop; then, each round, one event is
published and the clock runs until every inbox row is written.

"Every row written" is read off the job queue, not by counting notifications while the workers
run (a ``COUNT(*)`` over a million rows would compete with them for the CPU): a ``fanout_chunk``
job is deleted in the same transaction that writes its rows, and the ``fanout`` job is replaced
by its chunks atomically, so once no fan-out job of the event is left every row is committed.
The notifications are then counted once, and a count other than N fails the bench.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from rich.progress import Progress
from rich.table import Table
from sqlalchemy import func, insert, select

from tidings.bench import BenchFailure
from tidings.bench.measure import median
from tidings.bench.processes import WorkerProcesses
from tidings.bench.report import environment, fmt_rate
from tidings.bench.stores import BenchStore, database_of, redacted
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.fanout.specs import FANOUT, FANOUT_CHUNK
from tidings.store.sql.database import Database
from tidings.store.sql.schema import follows, jobs, notifications

ACTOR = "bench-star"
EVENT_TYPE = EventType("bench.post", category="bench", audience=("actor_followers",))
LOAD_BATCH = 10_000
KEEP_BETWEEN_ROUNDS = ("follows", "event_types", "alembic_version")


@dataclass(frozen=True)
class FanoutSettings:
    store: str | None
    subscribers: tuple[int, ...]
    workers: tuple[int, ...]
    scale: float = 1.0
    rounds: int = 3
    chunk_size: int = 5000
    poll: float = 0.01
    timeout: float = 600.0


def chunk_jobs(subscribers: int, chunk_size: int) -> int:
    """How many ``fanout_chunk`` jobs replace the ``fanout`` job (0: it delivers itself)."""
    return math.ceil(subscribers / chunk_size) if subscribers > chunk_size else 0


def follower_id(i: int) -> str:
    return f"f{i:08d}"


def load_followers(store: BenchStore, db: Database, count: int,
                   advance: Callable[[int], None]) -> None:
    """Insert ``count`` follows of :data:`ACTOR` as fast as the backend allows."""
    with db.write() as conn:
        if store.backend == "postgresql":
            raw: Any = conn.connection.driver_connection  # a psycopg 3 connection
            sql = "COPY follows (follower, followee, created_at) FROM STDIN"
            with raw.cursor() as cursor, cursor.copy(sql) as copy:
                for i in range(count):
                    copy.write_row((follower_id(i), ACTOR, 0))
                    if i % LOAD_BATCH == LOAD_BATCH - 1:
                        advance(LOAD_BATCH)
            advance(count % LOAD_BATCH)
            return
        for start in range(0, count, LOAD_BATCH):
            stop = min(start + LOAD_BATCH, count)
            conn.execute(insert(follows), [
                {"follower": follower_id(i), "followee": ACTOR, "created_at": 0}
                for i in range(start, stop)])
            advance(stop - start)


def fanout_jobs_left(db: Database) -> int:
    with db.read() as conn:
        return int(conn.execute(
            select(func.count()).select_from(jobs)
            .where(jobs.c.func.in_([FANOUT, FANOUT_CHUNK]))).scalar_one())


def wait_for_queue(db: Database, deadline: float, procs: WorkerProcesses) -> None:
    """Let the workers finish what the round left (inbox-cap checks) before the next one."""
    while True:
        with db.read() as conn:
            if conn.execute(select(func.count()).select_from(jobs)).scalar_one() == 0:
                return
        procs.check_alive()
        if time.monotonic() > deadline:
            raise BenchFailure("the job queue did not drain")
        time.sleep(0.05)


def one_round(t: Tidings, settings: FanoutSettings, subscribers: int, procs: WorkerProcesses,
              progress: Progress, label: str) -> float:
    """Publish one event and return the seconds until its last inbox row was committed."""
    chunks = chunk_jobs(subscribers, settings.chunk_size)
    task = progress.add_task(label, total=subscribers)
    deadline = time.monotonic() + settings.timeout
    started = time.perf_counter()
    event_id = int(t.publish(Event(EVENT_TYPE.name, actor=ACTOR, object="bench:post")).id)
    polls = 0
    while (left := fanout_jobs_left(database_of(t))) > 0:
        if chunks and left <= chunks:
            progress.update(task, completed=(chunks - left) * settings.chunk_size)
        polls += 1
        if polls % 100 == 0:
            procs.check_alive()
        if time.monotonic() > deadline:
            raise BenchFailure(f"fan-out to {subscribers:,} not done after {settings.timeout} s")
        # Within 1 % of the elapsed time, without the poll itself taking the workers' CPU.
        time.sleep(min(0.02, max(0.002, (time.perf_counter() - started) / 100)))
    seconds = time.perf_counter() - started
    progress.update(task, completed=subscribers)
    with database_of(t).read() as conn:
        written = conn.execute(select(func.count()).select_from(notifications)
                               .where(notifications.c.event_id == event_id)).scalar_one()
    if written != subscribers:
        raise BenchFailure(f"{written:,} inbox rows written for {subscribers:,} followers")
    wait_for_queue(database_of(t), deadline, procs)
    progress.remove_task(task)
    return seconds


def run(settings: FanoutSettings, progress: Progress) -> dict[str, Any]:
    """Run every (subscribers, workers) pair for ``settings.rounds`` rounds."""
    results: list[dict[str, Any]] = []
    with BenchStore(settings.store) as store:
        workers = settings.workers
        notes: list[str] = []
        if store.backend == "sqlite" and workers != (1,):
            # One writer at a time: more processes would only queue on the lock.
            workers = (1,)
            notes.append("SQLite has one writer: ran with 1 worker process only")
        t = Tidings(Config(database_url=store.url, chunk_size=settings.chunk_size), pool_size=2)
        try:
            overall = progress.add_task("fan-out runs", total=len(settings.subscribers)
                                        * len(workers) * settings.rounds)
            for subscribers in settings.subscribers:
                store.empty_tables(database_of(t))
                t.define_type(EVENT_TYPE)  # before the workers start, so they read it
                loading = progress.add_task(f"loading {subscribers:,} follows", total=subscribers)
                load_followers(store, database_of(t), subscribers,
                               partial(progress.advance, loading))
                progress.remove_task(loading)
                store.analyze(database_of(t))
                for count in workers:
                    seconds: list[float] = []
                    with WorkerProcesses(store.url, count, chunk_size=settings.chunk_size,
                                         poll=settings.poll) as procs:
                        for r in range(settings.rounds):
                            store.empty_tables(database_of(t), keep=KEEP_BETWEEN_ROUNDS)
                            label = f"{subscribers:,} followers, {count} worker(s), round {r + 1}"
                            seconds.append(one_round(t, settings, subscribers, procs,
                                                     progress, label))
                            progress.advance(overall)
                    results.append(_summary(subscribers, count, settings, seconds))
        finally:
            t.close()
        backend = store.backend
    return {
        "workload": "fanout",
        "store": redacted(settings.store) if settings.store else "sqlite (temporary file)",
        "backend": backend,
        "settings": {**{k: v for k, v in asdict(settings).items() if k != "store"},
                     "workers": list(workers)},
        "environment": environment(),
        "notes": notes,
        "results": results,
    }


def _summary(subscribers: int, workers: int, settings: FanoutSettings,
             seconds: Sequence[float]) -> dict[str, Any]:
    rates = [subscribers / s for s in seconds]
    chunks = chunk_jobs(subscribers, settings.chunk_size)
    return {
        "subscribers": subscribers,
        "workers": workers,
        "chunk_jobs": chunks,
        "rounds": len(seconds),
        "seconds": [round(s, 4) for s in seconds],
        "median_seconds": round(median(seconds), 4),
        "max_seconds": round(max(seconds), 4),
        "deliveries_per_second": round(median(rates), 1),
    }


def table(result: dict[str, Any]) -> list[Table]:
    out = Table(title=f"W3 fan-out — {result['store']} "
                      f"(median of {result['settings']['rounds']} rounds)",
                title_justify="left")
    for column in ("subscribers", "workers", "chunk jobs", "time to complete (s)",
                   "worst (s)", "deliveries/s"):
        out.add_column(column, justify="right")
    for row in result["results"]:
        out.add_row(f"{row['subscribers']:,}", str(row["workers"]), str(row["chunk_jobs"]),
                    f"{row['median_seconds']:.3f}", f"{row['max_seconds']:.3f}",
                    fmt_rate(row["deliveries_per_second"]))
    return [out]
