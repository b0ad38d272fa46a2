"""Lanes: which jobs a worker's threads take, and how many of one group run at once.

A lane's threads claim only its job functions (or every function but some), so work that waits
on other people's servers (webhooks) runs on threads of its own. Inside a lane, ``per_group``
bounds the jobs of one group (:func:`~tidings.jobs.model.group_of`: a webhook's receiving host)
that run at once in this process: a claim passes over the groups at that limit
(``JobAdmin.claim(busy=…)``), so a host that never answers holds only its share of the lane's
threads while other hosts' deliveries go on, and its own jobs wait in the queue unclaimed.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tidings.jobs.model import Job, group_of


@dataclass(frozen=True)
class Lane:
    """``threads`` threads that claim only jobs of ``funcs``, or of every function but
    ``exclude`` (neither: any job), ``batch`` jobs a claim (None: the worker's), at most
    ``per_group`` jobs of one group at once (None: no bound)."""

    name: str
    threads: int
    funcs: Sequence[str] | None = None
    exclude: Sequence[str] | None = None
    batch: int | None = None
    per_group: int | None = None

    @staticmethod
    def apart(threads: int, name: str, funcs: Sequence[str], apart: int,
              batch: int | None = None, per_group: int | None = None) -> list[Lane]:
        """``threads`` for every job but ``funcs`` (claiming ``batch`` at a time), and a lane
        ``name`` of ``apart`` threads of their own for ``funcs``, one job a claim, at most
        ``per_group`` of one group at once (``apart`` 0: this worker leaves them to another)."""
        lanes = [Lane("jobs", threads, exclude=tuple(funcs), batch=batch)]
        if apart > 0:
            lanes.append(Lane(name, apart, funcs=tuple(funcs), batch=1, per_group=per_group))
        return lanes



class GroupLimit:
    """The jobs of each group running now in this worker (shared by its threads)."""

    def __init__(self) -> None:
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    def busy(self, per_group: int) -> list[str]:
        """The groups running ``per_group`` jobs already: a claim passes over them."""
        with self._lock:
            return [group for group, count in self._running.items() if count >= per_group]

    @contextlib.contextmanager
    def place(self, job: Job, per_group: int) -> Iterator[bool]:
        """Hold a place of the job's group while it runs; yields False (and holds nothing)
        when the group has none left (two threads claimed its last one at once)."""
        group = group_of(job.unique_key)
        if group is None:
            yield True
            return
        with self._lock:
            if self._running[group] >= per_group:
                placed = False
            else:
                self._running[group] += 1
                placed = True
        if not placed:
            yield False
            return
        try:
            yield True
        finally:
            with self._lock:
                self._running[group] -= 1
                if self._running[group] <= 0:
                    del self._running[group]
