"""The job queue (TheSchwartz semantics) and the worker's handling of leases and failures."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from engines import enqueue, jobs_by_func, keys_of, open_tidings
from tidings.clock import FrozenClock
from tidings.engine import Tidings
from tidings.exceptions import StoreUnavailable
from tidings.jobs.context import Handler, JobContext
from tidings.jobs.model import SECOND, Job, JobSpec
from tidings.jobs.worker import OUTAGE_GIVEBACKS
from tidings.ports import Tx

LEASE = 30.0
BACKOFF = 2.0


@pytest.fixture
def t(any_store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(any_store_url, clock=clock, lease_seconds=LEASE, job_max_attempts=3,
                      job_backoff_seconds=BACKOFF) as tidings:
        yield tidings


def _raise(ctx: JobContext, tx: Tx, job: Job) -> None:
    raise ValueError(f"boom on attempt {job.attempts}")


def _register(ctx: JobContext, tx: Tx, job: Job) -> None:
    """A handler with a visible side effect: it registers the user named in its args."""
    tx.graph.add_user(job.args["user"], ctx.clock.now_us())


def _register_carol(ctx: JobContext, tx: Tx, job: Job) -> None:
    tx.graph.add_user("carol", ctx.clock.now_us())


_boom = Handler(run=_raise)
_add_user = Handler(run=_register)
_add_carol = Handler(run=_register_carol)


def _claimed(jobs: list[Job]) -> list[tuple[str, dict[str, Any]]]:
    return [(job.func, job.args) for job in jobs]


def _users(t: Tidings) -> dict[str, int]:
    """Join times of the users the handlers below register."""
    with t.store.read() as tx:
        return tx.graph.joined(["bob", "carol"])


def test_a_unique_key_already_queued_makes_enqueue_a_no_op(t: Tidings) -> None:
    enqueue(t, JobSpec("probe", {"n": 1}, unique_key="probe:x"))
    enqueue(t, JobSpec("probe", {"n": 2}, unique_key="probe:x"),
            JobSpec("probe", {"n": 3}, unique_key="probe:y"))
    enqueue(t, JobSpec("probe", {"n": 4}), JobSpec("probe", {"n": 4}))  # no key: never merged

    assert t.queue.stats()["queued"] == 4
    assert sorted(j.args["n"] for j in t.queue.claim(10)) == [1, 3, 4, 4]


def test_a_unique_key_is_free_again_once_its_job_completed(t: Tidings) -> None:
    t.handlers["add_user"] = _add_user
    enqueue(t, JobSpec("add_user", {"user": "bob"}, unique_key="u"))
    assert t.run_jobs() == 1

    enqueue(t, JobSpec("add_user", {"user": "carol"}, unique_key="u"))

    assert _claimed(t.queue.claim(5)) == [("add_user", {"user": "carol"})]


def test_run_after_holds_a_job_back_until_its_time(t: Tidings, clock: FrozenClock) -> None:
    later = clock.now_us() + 10 * SECOND
    enqueue(t, JobSpec("probe", {"n": 1}, run_after=later))

    assert t.queue.claim(5) == []
    assert t.queue.stats() == {"queued": 1, "runnable": 0, "running": 0, "failed": 0}
    assert t.queue.next_run_after() == later

    clock.advance(10)
    assert _claimed(t.queue.claim(5)) == [("probe", {"n": 1})]


def test_claims_take_the_highest_priority_first(t: Tidings, clock: FrozenClock) -> None:
    enqueue(t, JobSpec("probe", {"n": "low"}, priority=9))
    enqueue(t, JobSpec("probe", {"n": "mid"}, priority=5))
    enqueue(t, JobSpec("probe", {"n": "top-1"}, priority=1))
    enqueue(t, JobSpec("probe", {"n": "top-2"}, priority=1))

    first = t.queue.claim(1)
    rest = t.queue.claim(10)

    assert [j.args["n"] for j in first] == ["top-1"]
    assert [j.args["n"] for j in rest] == ["top-2", "mid", "low"]


def test_a_claim_can_be_limited_to_some_functions(t: Tidings) -> None:
    enqueue(t, JobSpec("a", {}, priority=1), JobSpec("b", {}, priority=9))

    assert _claimed(t.queue.claim(5, funcs=["b"])) == [("b", {})]
    assert _claimed(t.queue.claim(5, funcs=["b"])) == []


def test_a_crashed_workers_job_is_taken_again_when_its_lease_runs_out(
        t: Tidings, clock: FrozenClock) -> None:
    enqueue(t, JobSpec("probe", {"n": 1}))
    (first,) = t.queue.claim(5)
    # The worker holding it dies here; until the lease ends nobody else may take it.
    assert t.queue.claim(5) == []
    assert t.queue.stats()["running"] == 1

    clock.advance(LEASE - 1)
    assert t.queue.claim(5) == []
    clock.advance(2)
    (second,) = t.queue.claim(5)

    assert second.id == first.id
    assert (first.attempts, second.attempts) == (1, 2)
    assert second.token != first.token
    assert t.queue.stats()["queued"] == 1
    assert t.queue.still_mine(second) is True
    assert t.queue.still_mine(first) is False


def test_a_failure_is_logged_and_retried_with_backoff(t: Tidings, clock: FrozenClock) -> None:
    t.handlers["boom"] = _boom
    enqueue(t, JobSpec("boom", {"n": 1}))

    assert t.run_jobs() == 1
    (failure,) = t.queue.failures()
    assert (failure.func, failure.args, failure.attempt, failure.final) == (
        "boom", {"n": 1}, 1, False)
    assert "ValueError: boom on attempt 1" in failure.error
    assert t.queue.stats() == {"queued": 1, "runnable": 0, "running": 0, "failed": 0}
    due = t.queue.next_run_after()  # anywhere in the window (full jitter)
    assert due is not None and failure.failed_at <= due <= failure.failed_at + int(
        BACKOFF * SECOND)
    if due > clock.now_us():
        assert t.run_jobs() == 0  # not before the backoff ends

    clock.advance(BACKOFF)
    assert t.run_jobs() == 1
    second = t.queue.failures()[0]
    assert (second.attempt, second.final) == (2, False)
    assert t.queue.stats()["queued"] == 1
    due = t.queue.next_run_after()
    assert due is not None and second.failed_at <= due <= second.failed_at + int(
        2 * BACKOFF * SECOND)  # the window doubled
    clock.advance(2 * BACKOFF)
    assert t.run_jobs() == 1
    assert t.queue.stats()["failed"] == 1  # the third attempt was the last


def test_the_last_attempt_fails_for_good(t: Tidings, clock: FrozenClock) -> None:
    t.handlers["boom"] = _boom
    enqueue(t, JobSpec("boom", {"n": 1}, unique_key="boom"))

    for _ in range(3):
        assert t.run_jobs() == 1
        clock.advance(3600)

    assert t.run_jobs() == 0
    assert jobs_by_func(t) == {}
    assert [(f.attempt, f.final) for f in t.queue.failures()] == [
        (3, True), (2, False), (1, False)]
    assert [f.attempt for f in t.queue.failures(final_only=True)] == [3]
    assert t.queue.stats() == {"queued": 0, "runnable": 0, "running": 0, "failed": 1}


def test_a_job_without_a_handler_fails(t: Tidings) -> None:
    enqueue(t, JobSpec("nobody-handles-this", {}))

    t.run_jobs()

    (failure,) = t.queue.failures()
    assert "nobody-handles-this" in failure.error
    assert failure.final is False


def test_replace_with_swaps_one_job_for_several(t: Tidings) -> None:
    enqueue(t, JobSpec("parent", {}))
    (job,) = t.queue.claim(1)

    done = t.store.transact(lambda tx: tx.jobs.replace_with(
        job, [JobSpec("child", {"n": 1}), JobSpec("child", {"n": 2})]))

    assert done is True
    assert jobs_by_func(t) == {"child": 2}
    assert sorted(_claimed(t.queue.claim(10)), key=lambda job: job[1]["n"]) == [
        ("child", {"n": 1}), ("child", {"n": 2})]


def test_replace_with_is_atomic(t: Tidings) -> None:
    enqueue(t, JobSpec("parent", {}))
    (job,) = t.queue.claim(1)

    def work(tx: Tx) -> None:
        tx.jobs.replace_with(job, [JobSpec("child", {"n": 1})])
        raise RuntimeError("crash after replace_with")

    with pytest.raises(RuntimeError):
        t.store.transact(work)

    assert jobs_by_func(t) == {"parent": 1}


def test_replace_with_after_the_lease_was_lost_enqueues_nothing(
        t: Tidings, clock: FrozenClock) -> None:
    enqueue(t, JobSpec("parent", {}))
    (stale,) = t.queue.claim(1)
    clock.advance(LEASE + 1)
    (fresh,) = t.queue.claim(1)

    done = t.store.transact(lambda tx: tx.jobs.replace_with(stale, [JobSpec("child", {})]))

    assert done is False
    assert jobs_by_func(t) == {"parent": 1}
    assert t.queue.still_mine(fresh) is True


def test_a_job_whose_lease_was_lost_writes_nothing(t: Tidings, clock: FrozenClock) -> None:
    t.handlers["add_user"] = _add_user
    enqueue(t, JobSpec("add_user", {"user": "bob"}))
    (stale,) = t.queue.claim(1)
    clock.advance(LEASE + 1)
    (fresh,) = t.queue.claim(1)
    worker = t.worker()

    assert worker.run_job(stale) is False  # its writes roll back
    assert _users(t) == {}
    assert jobs_by_func(t) == {"add_user": 1}

    assert worker.run_job(fresh) is True
    assert list(_users(t)) == ["bob"]
    assert jobs_by_func(t) == {}


def test_a_job_completed_under_another_lease_writes_nothing(
        t: Tidings, clock: FrozenClock) -> None:
    t.handlers["add_user"] = _add_user
    enqueue(t, JobSpec("add_user", {"user": "bob"}))
    (stale,) = t.queue.claim(1)
    clock.advance(LEASE + 1)
    (fresh,) = t.queue.claim(1)
    worker = t.worker()
    assert worker.run_job(fresh) is True
    users_before = _users(t)
    assert list(users_before) == ["bob"]

    # Had the stale run gone ahead, it would register another user.
    t.handlers["add_user"] = _add_carol
    assert worker.run_job(stale) is False

    assert _users(t) == users_before
    assert jobs_by_func(t) == {}
    assert t.queue.failures() == []  # a lost lease is not a failure


def test_a_lost_lease_on_a_fanout_delivers_nothing(t: Tidings, clock: FrozenClock) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    (stale,) = t.queue.claim(1)
    clock.advance(LEASE + 1)
    (fresh,) = t.queue.claim(1)
    worker = t.worker()

    assert worker.run_job(stale) is False
    assert keys_of(t) == []
    assert worker.run_job(fresh) is True
    assert [k.user_id for k in keys_of(t)] == ["bob"]


def test_release_gives_a_job_back_without_counting_the_attempt(t: Tidings) -> None:
    enqueue(t, JobSpec("probe", {}))
    (job,) = t.queue.claim(1)

    t.queue.release(job)
    (again,) = t.queue.claim(1)

    assert again.id == job.id
    assert again.attempts == 1


def _unavailable(ctx: JobContext, tx: Tx, job: Job) -> None:
    raise StoreUnavailable("statement timeout")


def test_an_unavailable_store_gives_the_job_back_without_spending_an_attempt(t: Tidings) -> None:
    t.handlers["flaky"] = Handler(run=_unavailable)
    enqueue(t, JobSpec("flaky", {}))
    worker = t.worker()

    with pytest.raises(StoreUnavailable):
        worker.run_once()

    assert t.queue.failures() == []
    (again,) = t.queue.claim(1)
    assert again.attempts == 1  # this claim's: the given-back run did not count


def test_a_job_that_always_meets_an_unavailable_store_spends_its_attempts(
        t: Tidings, clock: FrozenClock) -> None:
    """The queue answers every time, so it is the job, not an outage: it fails for good
    instead of being given back forever."""
    t.handlers["flaky"] = Handler(run=_unavailable)
    enqueue(t, JobSpec("flaky", {}))
    worker = t.worker()

    runs = 0
    while t.queue.stats()["queued"] and runs < 100:
        runs += 1
        with contextlib.suppress(StoreUnavailable):
            worker.run_once()
        clock.advance(3600)

    assert t.queue.stats() == {"queued": 0, "runnable": 0, "running": 0, "failed": 1}
    assert runs == 3 * OUTAGE_GIVEBACKS
    assert all("store unavailable on every run" in f.error for f in t.queue.failures())


def test_the_store_hears_of_queued_jobs_only_once_their_unit_committed(t: Tidings) -> None:
    heard: list[tuple[int, int]] = []  # (jobs queued, jobs the queue holds when told)
    t.listeners.append(lambda name, value: heard.append((int(value), t.queue.stats()["queued"]))
                       if name == "job_queued" else None)

    def queue_then_fail(tx: Tx) -> None:
        tx.jobs.enqueue_many([JobSpec("probe", {"n": 1})])
        raise ValueError("roll back")

    with pytest.raises(ValueError):
        t.store.transact(queue_then_fail)
    assert heard == []  # a unit rolled back queued nothing

    enqueue(t, JobSpec("probe", {"n": 2}), JobSpec("probe", {"n": 3}))
    assert heard == [(2, 2)]  # told after the commit: the jobs are there to be claimed


def _worker_stacks() -> str:
    """Where each of the worker's threads is now: what a failure below prints, so that a
    rare one shows whether a loop waited for a wake or for the store."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "\n".join(f"{names[ident]}:\n{''.join(traceback.format_stack(frame))}"
                     for ident, frame in sys._current_frames().items()
                     if names.get(ident, "").startswith("tidings-"))


def test_a_worker_of_this_process_is_woken_by_jobs_queued_here(t: Tidings) -> None:
    """With a poll far longer than the wait below, only the wake can run the job in time.
    (Once in a few full runs on MariaDB, here or in the test below, a runnable job was still
    waiting after 20 s, not failed and not claimed; the wait is longer now than a lock wait
    could keep a claim, and a failure shows the worker's threads.)"""
    t.handlers["add_user"] = _add_user
    worker = t.worker(poll_seconds=600.0)
    worker.start()
    stacks = ""
    try:
        enqueue(t, JobSpec("add_user", {"user": "bob"}))
        deadline = time.monotonic() + 60.0
        while "bob" not in _users(t) and time.monotonic() < deadline:
            time.sleep(0.01)
        if "bob" not in _users(t):
            stacks = _worker_stacks()
    finally:
        worker.stop()
    assert "bob" in _users(t), (t.queue.stats(), t.queue.failures(), stacks)


def test_a_failed_job_runs_again_when_its_backoff_ends_not_at_the_next_poll(
        t: Tidings, clock: FrozenClock) -> None:
    """The worker that retried a job looks for it once its backoff has passed."""
    def flaky(ctx: JobContext, tx: Tx, job: Job) -> None:
        if job.attempts == 1:
            raise ValueError("boom on the first attempt")
        _register(ctx, tx, job)

    t.handlers["add_user"] = Handler(run=flaky)
    worker = t.worker(poll_seconds=600.0)
    worker.start()
    stacks = ""
    try:
        enqueue(t, JobSpec("add_user", {"user": "bob"}))
        deadline = time.monotonic() + 60.0  # as in the test above
        failed = False
        while "bob" not in _users(t) and time.monotonic() < deadline:
            if not failed and t.queue.failures():
                failed = True
                clock.advance(BACKOFF)  # the store's time passes as the worker waits
            time.sleep(0.01)
        if "bob" not in _users(t):
            stacks = _worker_stacks()
    finally:
        worker.stop()
    assert "bob" in _users(t), (t.queue.stats(), t.queue.failures(), stacks)
    assert [f.attempt for f in t.queue.failures()] == [1]
