"""Ports of the job queue: inside a unit of work, and its own operations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tidings.jobs.model import Failure, Job, JobSpec


@dataclass(frozen=True)
class QueueFigures:
    """The queue at one instant, for operators' metrics: jobs waiting (not claimed, due or
    not) and running (claimed, lease unexpired) per function, final failures on record per
    function, and when the oldest runnable job (due, unclaimed) became due."""

    now: int
    waiting: Mapping[str, int]
    running: Mapping[str, int]
    failed: Mapping[str, int]
    oldest_runnable: int | None


class JobQueue(Protocol):
    """The job queue as seen inside a unit of work: enqueue with it, finish with it."""

    def enqueue_many(self, specs: Sequence[JobSpec]) -> None:
        """Add jobs; one whose ``unique_key`` is already queued is skipped."""

    def complete(self, job: Job) -> bool:
        """Remove the job if its lease is still ``job.token``; False if it was lost."""

    def complete_many(self, jobs: Sequence[Job]) -> bool:
        """:meth:`complete` of several jobs in one write; False if any lease was lost (the
        caller then rolls the unit back)."""

    def replace_with(self, job: Job, specs: Sequence[JobSpec]) -> bool:
        """Swap the job atomically for ``specs`` (TheSchwartz's replace_with)."""

    def cancel(self, func: str, key_prefix: str, *, exact: bool = False) -> int:
        """Delete unclaimed jobs of ``func`` whose unique key starts with ``key_prefix`` (is
        ``key_prefix``, when ``exact``)."""

    def record_failure(self, job: Job, error: str, *, final: bool, now: int) -> None:
        """Log a failed attempt (a handler that retries by itself)."""


class JobAdmin(Protocol):
    """Queue operations that run in units of their own: claiming, failing, inspecting."""

    def claim(self, limit: int = 1, funcs: Sequence[str] | None = None,
              exclude: Sequence[str] | None = None, busy: Sequence[str] = ()) -> list[Job]:
        """Lease up to ``limit`` runnable jobs, lowest priority number first; none of the
        groups ``busy`` (:func:`tidings.jobs.model.group_of`)."""

    def fail(self, job: Job, error: str) -> bool:
        """Record a failed attempt; retry later with backoff or, after the last, give up.
        True if it will be retried. A claim whose lease passed to another worker records
        nothing and returns False."""

    def release(self, job: Job) -> None:
        """Give a claimed job back without counting the attempt (a graceful stop)."""

    def still_mine(self, job: Job) -> bool:
        """Whether the claim's lease still holds (checked before a send that cannot be undone)."""

    def stats(self) -> dict[str, int]:
        """Jobs queued, runnable, running, and final failures."""

    def next_run_after(self) -> int | None:
        """When the earliest queued job becomes runnable."""

    def counts_by_func(self) -> dict[str, int]:
        """Queued jobs (claimed ones included) per job function, for operators."""

    def figures(self) -> QueueFigures:
        """Waiting, running and failed jobs per function and the oldest runnable one's due
        time, read in a few aggregate statements (a metrics scrape)."""

    def failures(self, limit: int = 50, final_only: bool = False) -> list[Failure]:
        """Recent failures, newest first."""

    def retry(self, job_id: int) -> bool:
        """Queue again, to run now, a job that failed for good (its func and args as its last
        failure recorded them); its failures stay on record as attempts, no longer final.
        False if ``job_id`` has no final failure (never failed for good, or retried already)."""
