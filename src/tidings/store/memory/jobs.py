"""The job queue in memory, with TheSchwartz's semantics as the SQL store has them.

A claim moves a job's ``grabbed_until`` (its lease) into the future and that value is the
claim's token; completing needs the same token, so a worker whose lease ran out and was
taken over writes nothing. Failures retry with exponential backoff until the last attempt.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tidings.clock import Clock
from tidings.jobs.model import SECOND, Failure, Job, JobSpec, backoff_us, group_of
from tidings.ports.jobs import QueueFigures
from tidings.store.memory.state import JobRow, Journal, State

ERROR_CHARS = 4000  # as the SQL store keeps of an error message


@dataclass(frozen=True)
class QueueSettings:
    clock: Clock
    lease_us: int
    max_attempts: int
    backoff_us: int
    max_backoff_us: int = 3600 * SECOND


def _args(args: Any) -> str:
    return json.dumps(dict(args), separators=(",", ":"))


def _log_failure(state: State, journal: Journal, job: Job, error: str, final: bool,
                 now: int) -> None:
    failure_id = journal.next_id(state.seq, "failures")
    journal.put(state.failures, failure_id, Failure(
        job_id=job.id, func=job.func, args=json.loads(_args(job.args)),
        error=error[:ERROR_CHARS], attempt=job.attempts, final=final, failed_at=now))


def _drop(state: State, journal: Journal, row: JobRow) -> None:
    journal.drop(state.jobs, row.id)
    if row.unique_key is not None:
        journal.drop(state.job_keys, row.unique_key)


def _mine(state: State, job: Job) -> JobRow | None:
    row = state.jobs.get(job.id)
    return row if row is not None and row.grabbed_until == job.token else None


class MemoryJobQueue:
    """The queue as one unit of work sees it: enqueue, complete, replace, cancel."""

    def __init__(self, state: State, journal: Journal, settings: QueueSettings,
                 enqueued: Callable[[int], None]) -> None:
        self._s = state
        self._j = journal
        self._q = settings
        self._enqueued = enqueued

    def enqueue_many(self, specs: Sequence[JobSpec]) -> None:
        if not specs:
            return
        now = self._q.clock.now_us()
        for spec in specs:
            args = _args(spec.args)
            if spec.unique_key is not None and spec.unique_key in self._s.job_keys:
                continue
            job_id = self._j.next_id(self._s.seq, "jobs")
            self._j.put(self._s.jobs, job_id, JobRow(
                id=job_id, func=spec.func, args=args, unique_key=spec.unique_key,
                priority=spec.priority,
                run_after=spec.run_after if spec.run_after is not None else now,
                grabbed_until=0, attempts=0, created_at=now))
            if spec.unique_key is not None:
                self._j.put(self._s.job_keys, spec.unique_key, job_id)
        self._enqueued(len(specs))

    def complete(self, job: Job) -> bool:
        row = _mine(self._s, job)
        if row is None:
            return False
        _drop(self._s, self._j, row)
        return True

    def complete_many(self, jobs: Sequence[Job]) -> bool:
        rows = [_mine(self._s, job) for job in jobs]
        for row in rows:
            if row is not None and row.id in self._s.jobs:
                _drop(self._s, self._j, row)
        return all(row is not None for row in rows)

    def replace_with(self, job: Job, specs: Sequence[JobSpec]) -> bool:
        if not self.complete(job):
            return False
        self.enqueue_many(specs)
        return True

    def cancel(self, func: str, key_prefix: str, *, exact: bool = False) -> int:
        doomed = [r for r in self._s.jobs.values()
                  if r.func == func and r.grabbed_until == 0 and r.unique_key is not None
                  and (r.unique_key == key_prefix if exact
                       else r.unique_key.startswith(key_prefix))]
        for row in doomed:
            _drop(self._s, self._j, row)
        return len(doomed)

    def record_failure(self, job: Job, error: str, *, final: bool, now: int) -> None:
        _log_failure(self._s, self._j, job, error, final, now)


class MemoryJobAdmin:
    """Claiming, failing and inspecting, each in a unit of its own (``unit`` runs one)."""

    def __init__(self, unit: Callable[[Callable[[State, Journal], Any]], Any],
                 settings: QueueSettings) -> None:
        self._unit = unit
        self._q = settings

    def claim(self, limit: int = 1, funcs: Sequence[str] | None = None,
              exclude: Sequence[str] | None = None, busy: Sequence[str] = ()) -> list[Job]:
        def work(state: State, journal: Journal) -> list[Job]:
            now = self._q.clock.now_us()
            runnable = sorted(
                (r for r in state.jobs.values()
                 if r.run_after <= now and r.grabbed_until <= now
                 and (funcs is None or r.func in funcs)
                 and (exclude is None or r.func not in exclude)
                 and (not busy or group_of(r.unique_key) not in busy)),
                key=lambda r: (r.priority, r.run_after, r.id))[:limit]
            token = now + self._q.lease_us
            claimed: list[Job] = []
            for row in runnable:
                journal.put(state.jobs, row.id,
                            replace(row, grabbed_until=token, attempts=row.attempts + 1))
                claimed.append(Job(id=row.id, func=row.func, args=json.loads(row.args),
                                   unique_key=row.unique_key, priority=row.priority,
                                   attempts=row.attempts + 1, token=token))
            return claimed

        result: list[Job] = self._unit(work)
        return result

    def fail(self, job: Job, error: str) -> bool:
        def work(state: State, journal: Journal) -> bool:
            now = self._q.clock.now_us()
            row = _mine(state, job)
            if row is None:  # another worker holds the job now: its run is the one that counts
                return False
            final = job.attempts >= self._q.max_attempts
            _log_failure(state, journal, job, error, final, now)
            if final:
                _drop(state, journal, row)
                return False
            delay = backoff_us(job.attempts, self._q.backoff_us, self._q.max_backoff_us)
            journal.put(state.jobs, row.id, replace(row, run_after=now + delay, grabbed_until=0))
            return True

        result: bool = self._unit(work)
        return result

    def release(self, job: Job) -> None:
        def work(state: State, journal: Journal) -> None:
            row = _mine(state, job)
            if row is not None:
                journal.put(state.jobs, row.id,
                            replace(row, grabbed_until=0, attempts=row.attempts - 1))

        self._unit(work)

    def still_mine(self, job: Job) -> bool:
        def work(state: State, journal: Journal) -> bool:
            row = _mine(state, job)
            return row is not None and row.grabbed_until > self._q.clock.now_us()

        result: bool = self._unit(work)
        return result

    def stats(self) -> dict[str, int]:
        def work(state: State, journal: Journal) -> dict[str, int]:
            now = self._q.clock.now_us()
            rows = list(state.jobs.values())
            return {
                "queued": len(rows),
                "runnable": sum(1 for r in rows if r.run_after <= now and r.grabbed_until <= now),
                "running": sum(1 for r in rows if r.grabbed_until > now),
                "failed": sum(1 for f in state.failures.values() if f.final),
            }

        result: dict[str, int] = self._unit(work)
        return result

    def next_run_after(self) -> int | None:
        def work(state: State, journal: Journal) -> int | None:
            return min((r.run_after for r in state.jobs.values()), default=None)

        result: int | None = self._unit(work)
        return result

    def figures(self) -> QueueFigures:
        def work(state: State, journal: Journal) -> QueueFigures:
            now = self._q.clock.now_us()
            rows = list(state.jobs.values())
            runnable = [r.run_after for r in rows if r.run_after <= now and r.grabbed_until <= now]
            return QueueFigures(
                now=now, waiting=dict(Counter(r.func for r in rows if r.grabbed_until <= now)),
                running=dict(Counter(r.func for r in rows if r.grabbed_until > now)),
                failed=dict(Counter(f.func for f in state.failures.values() if f.final)),
                oldest_runnable=min(runnable, default=None))

        result: QueueFigures = self._unit(work)
        return result

    def counts_by_func(self) -> dict[str, int]:
        def work(state: State, journal: Journal) -> dict[str, int]:
            return dict(Counter(r.func for r in state.jobs.values()))

        result: dict[str, int] = self._unit(work)
        return result

    def retry(self, job_id: int) -> bool:
        def work(state: State, journal: Journal) -> bool:
            ids = [i for i in sorted(state.failures) if state.failures[i].job_id == job_id]
            last = next((state.failures[i] for i in reversed(ids) if state.failures[i].final),
                        None)
            if last is None:
                return False
            for i in ids:
                journal.put(state.failures, i, replace(state.failures[i], final=False))
            MemoryJobQueue(state, journal, self._q, lambda _n: None).enqueue_many(
                [JobSpec(last.func, last.args)])
            return True

        result: bool = self._unit(work)
        return result

    def failures(self, limit: int = 50, final_only: bool = False) -> list[Failure]:
        def work(state: State, journal: Journal) -> list[Failure]:
            newest_first = sorted(state.failures, reverse=True)
            chosen = [state.failures[i] for i in newest_first
                      if not final_only or state.failures[i].final]
            return chosen[:limit]

        result: list[Failure] = self._unit(work)
        return result
