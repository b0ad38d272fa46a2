"""Jobs that meet an unavailable store: given back without spending an attempt, unless the
same job meets one again and again while the queue itself answers.

An outage of any length gives no delivery up: the worker puts the job back and waits. But a
job whose store answers "unavailable" every time while the queue answers (a statement that
always times out, a key that always errs) is failing, not waiting: past OUTAGE_GIVEBACKS runs
in a row it spends attempts like any failure.
"""

from __future__ import annotations

import threading

from tidings.exceptions import StoreUnavailable
from tidings.jobs.model import Job
from tidings.ports import JobAdmin

# A job that meets an unavailable store this many times in a row, each time while the queue
# answered, spends an attempt.
OUTAGE_GIVEBACKS = 10
REMEMBERED = 10_000  # job ids kept; past it the count starts over (jobs others finished)


class Givebacks:
    """How many times in a row each job met an unavailable store (shared by a worker's
    threads)."""

    def __init__(self) -> None:
        self._met: dict[int, int] = {}
        self._lock = threading.Lock()

    def give_back(self, queue: JobAdmin, job: Job, *, counted: bool = True) -> bool:
        """Give ``job`` back to ``queue`` if it answers; True instead when this job has met an
        unavailable store OUTAGE_GIVEBACKS times in a row with the queue answering (then it
        is a failure). ``counted`` False (a hot store that lost its data waits for its
        rebuild, however long): given back every time."""
        with self._lock:
            count = self._met.get(job.id, 0) + 1
            if counted and count >= OUTAGE_GIVEBACKS:
                self._met.pop(job.id, None)
                return True
        try:
            queue.release(job)
        except StoreUnavailable:
            return False  # a real outage: not counted
        with self._lock:
            if len(self._met) >= REMEMBERED:
                self._met.clear()
            self._met[job.id] = count
        return False

    def forget(self, jobs: list[Job]) -> None:
        """These jobs ran to the end: their count starts over."""
        with self._lock:
            for job in jobs:
                self._met.pop(job.id, None)
