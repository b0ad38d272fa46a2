"""The worker: claims jobs, runs their handlers, retries failures with backoff.

A ``run`` handler's writes commit in one unit together with the job's completion (or its
``replace_with``), so on a transactional store a job's writes happen exactly once. A two-phase
handler sends outside any unit and completes in the unit that records the outcome. SIGTERM
(``stop()``) lets running jobs finish and takes no new ones.

Threads come in lanes (:class:`Lane`): each lane claims only its own job functions, so work
that waits on other people's servers (webhooks) runs on threads of its own and can never take
every thread from fan-out, and a lane may bound the jobs of one group it runs at once
(:mod:`tidings.jobs.lanes`).
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from tidings import logs, tracing
from tidings.exceptions import HotStoreEmptied, LeaseLost, StoreUnavailable
from tidings.jobs.context import Deferred, Handler, JobContext, Replacements
from tidings.jobs.lanes import GroupLimit, Lane
from tidings.jobs.model import SECOND, Job, backoff_ceiling_us
from tidings.jobs.outage import OUTAGE_GIVEBACKS, Givebacks
from tidings.ports import Tx

log = logging.getLogger("tidings.worker")

# Jobs claimed at once: fan-out jobs of one claim run in one unit (Worker.run_many), so a
# worker's threads (its "jobs" lane) take several at a time and Tidings.run_jobs (embedded
# mode, tests) many; the unit defers those past its budget of users (fanout.batch), so a claim
# of many large events is not one long unit. Worker.run_once() called by hand still claims
# ``batch`` (default one).
WORKER_BATCH = 40
RUN_JOBS_BATCH = 200
# The queue's longest backoff (SqlStore and MemoryStore's default), and how long after a
# retry's due time an idle loop looks for it (the queue computes the time a little later).
MAX_BACKOFF_US = 3600 * SECOND
RETRY_MARGIN = 0.05


def _complete(tx: Tx, job: Job, replacements: Replacements) -> None:
    done = tx.jobs.replace_with(job, replacements) if replacements else tx.jobs.complete(job)
    if not done:
        raise LeaseLost(f"job {job.id} was taken by another worker")


class Worker:
    """Runs jobs with ``concurrency`` threads (or the threads of ``lanes``) until stopped."""

    def __init__(self, ctx: JobContext, handlers: Mapping[str, Handler], *,
                 concurrency: int = 1, poll_seconds: float = 0.2, batch: int = 1,
                 maintenance_seconds: float = 3600.0,
                 funcs: Sequence[str] | None = None,
                 exclude: Sequence[str] | None = None,
                 lanes: Sequence[Lane] | None = None,
                 maintenance: Callable[[], None] | None = None) -> None:
        self.ctx = ctx
        self.handlers = handlers
        self.lanes = list(lanes) if lanes else [Lane("jobs", concurrency, funcs, exclude)]
        self.concurrency = sum(max(1, lane.threads) for lane in self.lanes)
        self.poll_seconds = poll_seconds
        self.batch = batch
        self.maintenance_seconds = maintenance_seconds
        self.funcs = funcs
        self.exclude = exclude
        self.maintenance = maintenance
        self._stop = threading.Event()
        # nudge(): a generation count under a condition, so that a nudge while a loop runs
        # its jobs is not lost (the loop then looks again at once instead of waiting)
        self._nudged = threading.Condition()
        self._generation = 0
        # when the retries this worker scheduled are due (time.monotonic(), a heap): an idle
        # loop looks again then, so a failed job runs again on time however long the poll is
        self._retries_due: list[float] = []
        self._threads: list[threading.Thread] = []
        self.processed = 0
        self._count_lock = threading.Lock()
        # how many jobs a batched claim asks for (run_once): what the last unit took when it
        # put some back, so that few go back each time, growing again by a quarter while
        # units take all they claim; None: the lane's batch
        self._claim: int | None = None
        self._givebacks = Givebacks()  # jobs that met an unavailable store (jobs.outage)
        self._groups = GroupLimit()  # the groups' jobs running now (lanes with per_group)

    # -- one job ------------------------------------------------------------------------------

    def _execute(self, handler: Handler, job: Job) -> None:
        store = self.ctx.store
        if handler.run is not None:
            run = handler.run

            def work(tx: Tx) -> None:
                _complete(tx, job, run(self.ctx, tx, job))

            store.transact(work)
            return
        assert handler.prepare and handler.send and handler.finish
        prepare, send, finish = handler.prepare, handler.send, handler.finish
        with store.read() as tx:
            prepared = prepare(self.ctx, tx, job)
        if prepared is None:
            store.transact(lambda tx: _complete(tx, job, None))
            return
        if not store.queue.still_mine(job):
            raise LeaseLost(f"job {job.id} was taken by another worker before sending")
        with tracing.span(f"tidings.send {job.func}", {"tidings.job.id": job.id}):
            outcome = send(self.ctx, prepared)
        store.transact(lambda tx: _complete(tx, job, finish(self.ctx, tx, job, prepared,
                                                            outcome)))

    def run_job(self, job: Job) -> bool:
        """Run one claimed job; True if it completed. What it logs carries its id; its span
        (tracing on) continues the trace its args carry."""
        with logs.job_scope([job.id]), tracing.job_span(job.func, job.id, job.attempts,
                                                        job.args):
            return self._run(job)

    def _run(self, job: Job) -> bool:
        handler = self.handlers.get(job.func)
        queue = self.ctx.store.queue
        observer = self.ctx.observer
        if handler is None:
            queue.fail(job, f"no handler for job function {job.func!r}")
            return False
        started = time.perf_counter()
        try:
            self._execute(handler, job)
        except LeaseLost as exc:
            log.warning("%s", exc)
            return False
        except StoreUnavailable as exc:
            observer.store_error(exc)
            # The store (or its Redis hot part) is away: not the job's fault. Give the job
            # back (if the queue answers; else its lease expires) and let the loop wait, unless
            # it has met one too often while the queue answered (jobs.outage).
            if not self._givebacks.give_back(queue, job,
                                             counted=not isinstance(exc, HotStoreEmptied)):
                raise
            log.warning("job %s (%s) met an unavailable store %d times while the queue "
                        "answered; counting it as a failure: %s", job.id, job.func,
                        OUTAGE_GIVEBACKS, exc)
            with contextlib.suppress(StoreUnavailable):
                retried = queue.fail(job, f"store unavailable on every run: {exc}")
                observer.job("retried" if retried else "failed")
            return False
        except Exception as exc:  # a handler's failure is recorded and retried, not fatal
            log.warning("job %s (%s) failed: %s", job.id, job.func, exc, exc_info=exc)
            tracing.failed(exc)
            observer.store_error(exc)
            retried = True
            try:
                retried = queue.fail(job, "".join(traceback.format_exception_only(exc)).strip())
            except StoreUnavailable:
                log.warning("could not record the failure of job %s; its lease will expire",
                            job.id)
            observer.job("retried" if retried else "failed")
            if retried:
                self._retry_later(job)
            return False
        if job.func.startswith("fanout"):
            observer.observe("fanout_seconds", time.perf_counter() - started)
        with self._count_lock:
            self.processed += 1
        self._givebacks.forget([job])
        observer.job("completed")
        return True

    def run_many(self, handler: Handler, jobs: Sequence[Job]) -> tuple[int, int]:
        """Run claimed jobs of one function with ``handler.run_many`` in one unit, completed
        together; if that unit fails, run each on its own (:meth:`run_job`: its retries,
        lease and give-back rules), so one bad job never holds up or loses the others. Jobs
        the handler deferred go back to the queue after the unit. Returns (jobs completed,
        jobs put back). Tracing on, each job has its span, and the handler gets the jobs with
        their own span's trace context in their args (to resume per job)."""
        run_many = handler.run_many
        assert run_many is not None
        deferred: list[Job] = []

        traced = list(jobs)

        def work(tx: Tx) -> None:
            results = run_many(self.ctx, tx, traced)
            if len(results) != len(jobs):
                raise ValueError("run_many gave a result per job")
            deferred[:] = [job for job, more in zip(jobs, results, strict=True)
                           if isinstance(more, Deferred)]
            plain = [job for job, more in zip(jobs, results, strict=True) if not more]
            if not tx.jobs.complete_many(plain):
                raise LeaseLost("a job of the batch was taken by another worker")
            for job, more in zip(jobs, results, strict=True):
                if more and not isinstance(more, Deferred):
                    _complete(tx, job, more)

        started = time.perf_counter()
        with logs.job_scope([job.id for job in jobs]):
            try:
                with tracing.job_spans([(j.func, j.id, j.attempts, j.args) for j in jobs]
                                       ) as carriers:
                    traced[:] = [replace(j, args={**j.args, **c}) if c else j
                                 for j, c in zip(jobs, carriers, strict=True)]
                    self.ctx.store.transact(work)
            except Exception as exc:
                log.info("a batch of %d %s jobs failed (%s); running each on its own",
                         len(jobs), jobs[0].func, exc, exc_info=exc)
                return sum(1 for job in jobs if self.run_job(job)), 0
        for job in deferred:  # for another unit (of this worker or another), in claim order
            try:
                self.ctx.store.queue.release(job)
            except Exception:  # its lease will expire, and it will be claimed again
                log.warning("could not put back deferred job %s; its lease will expire", job.id)
        later = {job.id for job in deferred}
        done = [job for job in jobs if job.id not in later]
        share = (time.perf_counter() - started) / max(len(done), 1)
        observer = self.ctx.observer
        with self._count_lock:
            self.processed += len(done)
        self._givebacks.forget(done)
        for job in done:
            if job.func.startswith("fanout"):
                observer.observe("fanout_seconds", share)
            observer.job("completed")
        return len(done), len(deferred)

    def run_once(self, lane: Lane | None = None) -> int:
        """Claim the next job (of the lane's functions) and run it; return how many jobs ran.
        When its function's handler has ``run_many`` (fan-out), up to ``batch`` jobs of that
        function are claimed and run together in one unit (:meth:`run_many`); other jobs are
        claimed and run one at a time, so a thread never holds jobs it cannot start."""
        queue = self.ctx.store.queue
        funcs, exclude = (lane.funcs, lane.exclude) if lane else (self.funcs, self.exclude)
        size = lane.batch if lane is not None and lane.batch is not None else self.batch
        if lane is not None and lane.per_group is not None:
            return self._run_grouped(lane, lane.per_group)
        jobs = queue.claim(1, funcs=funcs, exclude=exclude)
        first = self.handlers.get(jobs[0].func) if jobs and size > 1 else None
        asked = min(size, self._claim or size)
        if first is not None and first.run_many is not None and asked > 1:
            jobs += queue.claim(asked - 1, funcs=[jobs[0].func])
        together: dict[str, list[Job]] = {}
        for job in jobs:
            handler = self.handlers.get(job.func)
            if handler is not None and handler.run_many is not None:
                together.setdefault(job.func, []).append(job)
        ran: set[int] = set()
        put_back = 0
        for job in jobs:
            if job.id in ran:
                continue
            if self._stop.is_set():
                queue.release(job)
                continue
            group = together.get(job.func, [])
            if len(group) > 1:
                back = self.run_many(self.handlers[job.func], group)[1]
                self._claim = (max(len(group) - back, 2) if back
                               else min(size, asked + max(asked // 4, 1)))
                put_back += back
                ran.update(j.id for j in group)
            else:
                self.run_job(job)
        return len(jobs) - put_back

    def _run_grouped(self, lane: Lane, per_group: int) -> int:
        """Claim one job of the lane, none of a group already running ``per_group`` here, and
        run it; return how many jobs ran (0 or 1)."""
        queue = self.ctx.store.queue
        jobs = queue.claim(1, funcs=lane.funcs, exclude=lane.exclude,
                           busy=self._groups.busy(per_group))
        if not jobs:
            return 0
        job = jobs[0]
        if self._stop.is_set():
            queue.release(job)
            return 0
        with self._groups.place(job, per_group) as placed:
            if not placed:  # another thread took the group's last place meanwhile
                queue.release(job)
                return 1
            self.run_job(job)
        return 1

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

    def nudge(self) -> None:
        """Jobs were queued (and committed) in this process: idle loops look at once rather
        than at their next poll. Jobs queued by other processes are found by the poll."""
        with self._nudged:
            self._generation += 1
            self._nudged.notify_all()

    def _retry_later(self, job: Job) -> None:
        """``job`` failed and will run again within its backoff window: idle loops look then."""
        delay = backoff_ceiling_us(job.attempts, int(self.ctx.config.job_backoff_seconds * SECOND),
                           MAX_BACKOFF_US) / SECOND
        with self._nudged:
            if len(self._retries_due) < 10_000:  # beyond, the poll finds them
                heapq.heappush(self._retries_due, time.monotonic() + delay + RETRY_MARGIN)

    def _idle(self, generation: int) -> None:
        """Wait up to the poll interval (or until a retry this worker scheduled is due), or
        until a nudge since ``generation`` or a stop."""
        with self._nudged:
            wait = self.poll_seconds
            now = time.monotonic()
            due = self._retries_due
            if due and due[0] <= now:  # a retry is due: look now, once for all that are
                while due and due[0] <= now:
                    heapq.heappop(due)
                wait = 0.0
            elif due:
                wait = min(wait, due[0] - now)
            self._nudged.wait_for(
                lambda: self._generation != generation or self._stop.is_set(), wait)

    def _loop(self, lane: Lane) -> None:
        while not self._stop.is_set():
            try:
                generation = self._generation
                if self.run_once(lane) == 0:
                    self._idle(generation)
            except StoreUnavailable as exc:
                log.warning("store unavailable, retrying: %s", exc)
                self._stop.wait(1.0)
            except Exception:  # keep the worker alive; the job's lease will expire
                log.exception("worker loop error")
                self._stop.wait(1.0)

    def _maintenance(self) -> None:
        while self.maintenance is not None and not self._stop.is_set():
            try:
                self.maintenance()
            except Exception as exc:
                log.warning("could not schedule maintenance: %s", exc)
            self._stop.wait(self.maintenance_seconds)

    def _heard(self, name: str, _value: float) -> None:
        if name == "job_queued":  # the store's on_enqueue, after the unit's commit
            self.nudge()

    def start(self) -> None:
        self._stop.clear()
        self.ctx.observer.listeners.append(self._heard)
        for lane in self.lanes:
            for i in range(max(1, lane.threads)):
                thread = threading.Thread(target=self._loop, args=(lane,), daemon=True,
                                          name=f"tidings-{lane.name}-{i}")
                thread.start()
                self._threads.append(thread)
        thread = threading.Thread(target=self._maintenance, name="tidings-maintenance",
                                  daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Finish running jobs, take no new ones, and return when the threads have ended."""
        self._stop.set()
        self.nudge()  # idle loops end now
        with contextlib.suppress(ValueError):  # not started, or stopped before
            self.ctx.observer.listeners.remove(self._heard)
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
        self.nudge()
