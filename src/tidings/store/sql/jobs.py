"""The job queue on SQL, with TheSchwartz's semantics.

A job is claimed by moving its ``grabbed_until`` (the lease) into the future; a worker that dies
leaves the lease to run out and another worker takes the job again. The lease value doubles as
the claim's token: completing a job deletes it only if the token still matches, inside the same
transaction as the job's own writes, so a job whose lease was lost writes nothing.
On PostgreSQL and MariaDB claims use ``FOR UPDATE SKIP LOCKED``, so any number of workers on any
number of machines share one queue; SQLite has a single writer and needs nothing more.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Select, and_, case, delete, func, insert, or_, select, update

from tidings.clock import Clock
from tidings.jobs.model import SECOND, Failure, Job, JobSpec, backoff_us
from tidings.ports.jobs import QueueFigures
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import job_failures, jobs

# MariaDB's locking scan locks the rows it reads and rejects (another lane's jobs) until its
# transaction ends, so a claim at the same moment can skip a job nobody is taking. A claim that
# found nothing while a plain read shows a job runnable looks again after these pauses
# (seconds, each drawn between half and one and a half of it), then leaves it to the poll.
LOOK_AGAIN = (0.005, 0.01, 0.02, 0.04, 0.08)


def _row(spec: JobSpec, now: int) -> dict[str, Any]:
    return {
        "func": spec.func,
        "args": json.dumps(dict(spec.args), separators=(",", ":")),
        "unique_key": spec.unique_key,
        "priority": spec.priority,
        "run_after": spec.run_after if spec.run_after is not None else now,
        "grabbed_until": 0,
        "attempts": 0,
        "created_at": now,
    }


def _escape_like(text: str) -> str:
    """``text`` as a literal in a LIKE pattern (escape character ``\\``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _log_failure(conn: Connection, job: Job, error: str, *, final: bool, now: int) -> None:
    conn.execute(insert(job_failures).values(
        job_id=job.id, func=job.func, args=json.dumps(job.args, separators=(",", ":")),
        error=error[:4000], attempt=job.attempts, final=final, failed_at=now))


class SqlJobs:
    """The queue inside one transaction: enqueue, complete, replace."""

    def __init__(self, db: Database, conn: Connection, clock: Clock,
                 on_enqueue: Callable[[int], None] | None = None) -> None:
        self.db = db
        self.conn = conn
        self.clock = clock
        self.on_enqueue = on_enqueue

    def enqueue_many(self, specs: Sequence[JobSpec]) -> None:
        if not specs:
            return
        now = self.clock.now_us()
        rows = [_row(spec, now) for spec in specs]
        keyed = [r for r in rows if r["unique_key"] is not None]
        plain = [r for r in rows if r["unique_key"] is None]
        if plain:
            self.db.insert_many(self.conn, jobs, plain)
        if keyed:
            self.db.insert_many(self.conn, jobs, keyed, ignore=True)
        if self.on_enqueue is not None:
            self.on_enqueue(len(rows))

    def complete(self, job: Job) -> bool:
        result = self.conn.execute(
            delete(jobs).where(jobs.c.id == job.id, jobs.c.grabbed_until == job.token))
        return result.rowcount == 1

    def complete_many(self, done: Sequence[Job]) -> bool:
        by_token: dict[int, list[int]] = {}
        for job in done:
            by_token.setdefault(job.token, []).append(job.id)
        deleted = 0
        for token, ids in by_token.items():  # one lease for a whole claim: one statement
            for part in self.db.parts(sorted(ids)):
                deleted += self.conn.execute(delete(jobs).where(
                    self.db.among(jobs.c.id, part), jobs.c.grabbed_until == token)).rowcount
        return deleted == len({job.id for job in done})

    def replace_with(self, job: Job, specs: Sequence[JobSpec]) -> bool:
        if not self.complete(job):
            return False
        self.enqueue_many(specs)
        return True

    def cancel(self, func: str, key_prefix: str, *, exact: bool = False) -> int:
        key = (jobs.c.unique_key == key_prefix if exact
               else jobs.c.unique_key.like(_escape_like(key_prefix) + "%", escape="\\"))
        result = self.conn.execute(delete(jobs).where(
            jobs.c.func == func, key, jobs.c.grabbed_until == 0))
        return max(result.rowcount, 0)

    def record_failure(self, job: Job, error: str, *, final: bool, now: int) -> None:
        _log_failure(self.conn, job, error, final=final, now=now)


class SqlJobAdmin:
    """Claiming, failing and inspecting, each in a transaction of its own."""

    def __init__(self, db: Database, clock: Clock, *, lease_seconds: float = 60.0,
                 max_attempts: int = 8, backoff_seconds: float = 2.0,
                 max_backoff_seconds: float = 3600.0) -> None:
        self.db = db
        self.clock = clock
        self.lease_us = int(lease_seconds * SECOND)
        self.max_attempts = max_attempts
        self.backoff_us = int(backoff_seconds * SECOND)
        self.max_backoff_us = int(max_backoff_seconds * SECOND)

    def claim(self, limit: int = 1, funcs: Sequence[str] | None = None,
              exclude: Sequence[str] | None = None, busy: Sequence[str] = ()) -> list[Job]:
        found = self._claim(limit, funcs, exclude, busy)
        if found or self.db.backend != "mysql":
            return found
        for pause in LOOK_AGAIN:  # skipped, or being claimed by a transaction not yet done?
            with self.db.read() as conn:
                look = self._runnable(self.clock.now_us(), 1, funcs, exclude, busy)
                if conn.execute(look.with_only_columns(jobs.c.id)).first() is None:
                    return found
            time.sleep(random.uniform(0.5, 1.5) * pause)
            found = self._claim(limit, funcs, exclude, busy)
            if found:
                return found
        return found

    def _runnable(self, now: int, limit: int, funcs: Sequence[str] | None,
                  exclude: Sequence[str] | None, busy: Sequence[str] = ()) -> Select[Any]:
        query = (
            select(jobs.c.id, jobs.c.func, jobs.c.args, jobs.c.unique_key,
                   jobs.c.priority, jobs.c.attempts)
            .where(jobs.c.run_after <= now, jobs.c.grabbed_until <= now)
            .order_by(jobs.c.priority, jobs.c.run_after, jobs.c.id)
            .limit(limit)
        )
        if funcs is not None:
            query = query.where(jobs.c.func.in_(list(funcs)))
        if exclude:
            query = query.where(jobs.c.func.not_in(list(exclude)))
        if busy:  # a group's keys start "group:" (group_of); keyless jobs are in none
            query = query.where(or_(jobs.c.unique_key.is_(None), and_(*[
                jobs.c.unique_key.not_like(_escape_like(group) + ":%", escape="\\")
                for group in busy])))
        return query

    def _claim(self, limit: int, funcs: Sequence[str] | None,
               exclude: Sequence[str] | None, busy: Sequence[str]) -> list[Job]:
        def work(conn: Connection) -> list[Job]:
            now = self.clock.now_us()
            query = self._runnable(now, limit, funcs, exclude, busy)
            if self.db.skip_locked:
                query = query.with_for_update(skip_locked=True)
            rows = conn.execute(query).all()
            if not rows:
                return []
            token = now + self.lease_us
            conn.execute(update(jobs).where(jobs.c.id.in_([r.id for r in rows]))
                         .values(grabbed_until=token, attempts=jobs.c.attempts + 1))
            return [Job(id=r.id, func=r.func, args=json.loads(r.args), unique_key=r.unique_key,
                        priority=r.priority, attempts=r.attempts + 1, token=token)
                    for r in rows]

        return self.db.transact(work)

    def fail(self, job: Job, error: str) -> bool:
        def work(conn: Connection) -> bool:
            now = self.clock.now_us()
            final = job.attempts >= self.max_attempts
            mine = and_(jobs.c.id == job.id, jobs.c.grabbed_until == job.token)
            if final:
                changed = conn.execute(delete(jobs).where(mine)).rowcount
            else:
                delay = backoff_us(job.attempts, self.backoff_us, self.max_backoff_us)
                changed = conn.execute(update(jobs).where(mine).values(
                    run_after=now + delay, grabbed_until=0)).rowcount
            if changed != 1:  # another worker holds the job now: its run is the one that counts
                return False
            _log_failure(conn, job, error, final=final, now=now)
            return not final

        return self.db.transact(work)

    def release(self, job: Job) -> None:
        def work(conn: Connection) -> None:
            conn.execute(update(jobs)
                         .where(jobs.c.id == job.id, jobs.c.grabbed_until == job.token)
                         .values(grabbed_until=0, attempts=jobs.c.attempts - 1))

        self.db.transact(work)

    def still_mine(self, job: Job) -> bool:
        with self.db.read() as conn:
            row = conn.execute(select(jobs.c.grabbed_until).where(jobs.c.id == job.id)).first()
        return row is not None and row[0] == job.token and job.token > self.clock.now_us()

    def stats(self) -> dict[str, int]:
        now = self.clock.now_us()
        count = select(func.count()).select_from(jobs)
        with self.db.read() as conn:
            total = conn.execute(count).scalar_one()
            running = conn.execute(count.where(jobs.c.grabbed_until > now)).scalar_one()
            runnable = conn.execute(count.where(jobs.c.run_after <= now,
                                                jobs.c.grabbed_until <= now)).scalar_one()
            failed = conn.execute(select(func.count()).select_from(job_failures)
                                  .where(job_failures.c.final)).scalar_one()
        return {"queued": total, "runnable": runnable, "running": running, "failed": failed}

    def next_run_after(self) -> int | None:
        with self.db.read() as conn:
            value = conn.execute(select(func.min(jobs.c.run_after))).scalar()
        return int(value) if value is not None else None

    def figures(self) -> QueueFigures:
        now = self.clock.now_us()
        claimed = case((jobs.c.grabbed_until > now, 1), else_=0)
        with self.db.read() as conn:
            per_func = conn.execute(select(jobs.c.func, func.count(), func.sum(claimed))
                                    .group_by(jobs.c.func)).all()
            oldest = conn.execute(select(func.min(jobs.c.run_after)).where(
                jobs.c.run_after <= now, jobs.c.grabbed_until <= now)).scalar()
            failed = conn.execute(select(job_failures.c.func, func.count())
                                  .where(job_failures.c.final)
                                  .group_by(job_failures.c.func)).all()
        return QueueFigures(
            now=now, waiting={name: int(total) - int(busy or 0) for name, total, busy in per_func},
            running={name: int(busy or 0) for name, _total, busy in per_func},
            failed={name: int(count) for name, count in failed},
            oldest_runnable=int(oldest) if oldest is not None else None)

    def counts_by_func(self) -> dict[str, int]:
        with self.db.read() as conn:
            rows = conn.execute(select(jobs.c.func, func.count()).group_by(jobs.c.func)).all()
        return {name: int(count) for name, count in rows}

    def retry(self, job_id: int) -> bool:
        def work(conn: Connection) -> bool:
            last = conn.execute(
                select(job_failures.c.func, job_failures.c.args)
                .where(job_failures.c.job_id == job_id, job_failures.c.final)
                .order_by(job_failures.c.id.desc()).limit(1)).first()
            if last is None:
                return False
            conn.execute(update(job_failures).where(job_failures.c.job_id == job_id)
                         .values(final=False))
            SqlJobs(self.db, conn, self.clock).enqueue_many(
                [JobSpec(last.func, json.loads(last.args))])
            return True

        return self.db.transact(work)

    def failures(self, limit: int = 50, final_only: bool = False) -> list[Failure]:
        query = select(job_failures).order_by(job_failures.c.id.desc()).limit(limit)
        if final_only:
            query = query.where(job_failures.c.final)
        with self.db.read() as conn:
            rows = conn.execute(query).all()
        return [Failure(job_id=r.job_id, func=r.func, args=json.loads(r.args), error=r.error,
                        attempt=r.attempt, final=bool(r.final), failed_at=r.failed_at)
                for r in rows]
