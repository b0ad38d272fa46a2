"""The worker: claims jobs, runs their handlers, retries failures with backoff.

A handler runs inside one write transaction together with the job's completion (or its
``replace_with``), so on the SQL store a job's writes happen exactly once. SIGTERM (``stop()``)
lets running jobs finish and takes no new ones.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from tidings.exceptions import StoreUnavailable, TidingsError
from tidings.jobs.queue import Job, JobSpec

if TYPE_CHECKING:
    from tidings.engine import Tidings

log = logging.getLogger("tidings.worker")

Handler = Callable[["Tidings", Connection, Job], "list[JobSpec] | None"]


class LeaseLost(TidingsError):
    """Another worker took this job after its lease ran out; this run's writes roll back."""


class Worker:
    """Runs jobs with ``concurrency`` threads until stopped."""

    def __init__(self, tidings: Tidings, *, concurrency: int = 1, poll_seconds: float = 0.2,
                 batch: int = 1, maintenance_seconds: float = 3600.0) -> None:
        self.tidings = tidings
        self.concurrency = max(1, concurrency)
        self.poll_seconds = poll_seconds
        self.batch = batch
        self.maintenance_seconds = maintenance_seconds
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.processed = 0
        self._count_lock = threading.Lock()

    # -- one job ------------------------------------------------------------------------------

    def run_job(self, job: Job) -> bool:
        """Run one claimed job; True if it completed."""
        handler = self.tidings.handlers.get(job.func)
        queue = self.tidings.queue
        if handler is None:
            queue.fail(job, f"no handler for job function {job.func!r}")
            return False

        def work(conn: Connection) -> None:
            replacements = handler(self.tidings, conn, job)
            done = (queue.replace_with(conn, job, replacements) if replacements
                    else queue.complete(conn, job))
            if not done:
                raise LeaseLost(f"job {job.id} was taken by another worker")

        started = time.perf_counter()
        try:
            self.tidings.db.transact(work)
        except LeaseLost as exc:
            log.warning("%s", exc)
            return False
        except StoreUnavailable:
            raise
        except Exception as exc:  # a handler's failure is recorded and retried, not fatal
            log.warning("job %s (%s) failed: %s", job.id, job.func, exc)
            retried = True
            try:
                retried = queue.fail(job, "".join(traceback.format_exception_only(exc)).strip())
            except StoreUnavailable:
                log.warning("could not record the failure of job %s; its lease will expire",
                            job.id)
            self.tidings.metrics_job("retried" if retried else "failed")
            return False
        if job.func.startswith("fanout"):
            self.tidings.observe("fanout_seconds", time.perf_counter() - started)
        with self._count_lock:
            self.processed += 1
        self.tidings.metrics_job("completed")
        return True

    def run_once(self) -> int:
        """Claim a batch and run it; return how many jobs ran."""
        jobs = self.tidings.queue.claim(self.batch)
        for job in jobs:
            if self._stop.is_set():
                self.tidings.queue.release(job)
                continue
            self.run_job(job)
        return len(jobs)

    def drain(self, max_jobs: int | None = None) -> int:
        """Run runnable jobs until none are left (or ``max_jobs`` ran); for tests and embedding."""
        ran = 0
        while max_jobs is None or ran < max_jobs:
            count = self.run_once()
            if count == 0:
                break
            ran += count
        return ran

    # -- the loop -----------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self.run_once() == 0:
                    self._stop.wait(self.poll_seconds)
            except StoreUnavailable as exc:
                log.warning("store unavailable, retrying: %s", exc)
                self._stop.wait(1.0)
            except Exception:  # keep the worker alive; the job's lease will expire
                log.exception("worker loop error")
                self._stop.wait(1.0)

    def _maintenance(self) -> None:
        while not self._stop.is_set():
            try:
                self.tidings.schedule_maintenance()
            except Exception as exc:
                log.warning("could not schedule maintenance: %s", exc)
            self._stop.wait(self.maintenance_seconds)

    def start(self) -> None:
        self._stop.clear()
        for i in range(self.concurrency):
            thread = threading.Thread(target=self._loop, name=f"tidings-worker-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        thread = threading.Thread(target=self._maintenance, name="tidings-maintenance",
                                  daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Finish running jobs, take no new ones, and return when the threads have ended."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()

    def run_forever(self) -> None:
        self.start()
        try:
            while not self._stop.wait(0.5):
                pass
        finally:
            self.stop()

    def request_stop(self) -> None:
        self._stop.set()
