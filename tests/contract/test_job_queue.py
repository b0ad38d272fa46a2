"""JobQueue and JobAdmin: idempotent enqueues, claim order, leases, backoff, failures."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from contract_kit import write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.jobs.model import SECOND, Job, JobSpec, group_of, grouped_key

LEASE = 60  # seconds: the store fixture's default lease
ATTEMPTS = 8  # and its default attempts


def _enqueue(store: ports.Store, *specs: JobSpec) -> None:
    write(store, lambda tx: tx.jobs.enqueue_many(list(specs)))


def _claim_one(store: ports.Store, **options: object) -> Job:
    (job,) = store.queue.claim(1, **options)  # type: ignore[arg-type]
    return job


def test_a_claimed_job_carries_its_spec(store: ports.Store) -> None:
    _enqueue(store, JobSpec("send", {"user": "ann", "n": [1, 2]}, unique_key="k", priority=2))
    job = _claim_one(store)
    assert (job.func, job.args, job.unique_key, job.priority, job.attempts) == (
        "send", {"user": "ann", "n": [1, 2]}, "k", 2, 1)
    assert job.id > 0
    assert store.queue.claim(5) == []  # leased


def test_a_unique_key_is_queued_once(store: ports.Store) -> None:
    _enqueue(store, JobSpec("a", {"n": 1}, unique_key="k"), JobSpec("a", {"n": 2}, unique_key="k"))
    _enqueue(store, JobSpec("a", {"n": 3}, unique_key="k"), JobSpec("a", {"n": 4}),
             JobSpec("a", {"n": 5}))
    jobs = store.queue.claim(10)
    assert sorted(j.args["n"] for j in jobs) == [1, 4, 5]
    first = next(j for j in jobs if j.unique_key == "k")
    _enqueue(store, JobSpec("a", {"n": 6}, unique_key="k"))  # still queued (claimed): skipped
    assert write(store, lambda tx: tx.jobs.complete(first)) is True
    _enqueue(store, JobSpec("a", {"n": 7}, unique_key="k"))  # done: the key is free again
    assert _claim_one(store).args == {"n": 7}


def test_claim_order_priority_then_run_after_then_id(store: ports.Store,
                                                     clock: FrozenClock) -> None:
    now = clock.now_us()
    _enqueue(store, JobSpec("j", {"name": "a"}, priority=5, run_after=now - 100))
    _enqueue(store, JobSpec("j", {"name": "b"}, priority=3, run_after=now - 10))
    _enqueue(store, JobSpec("j", {"name": "c"}, priority=3, run_after=now - 50),
             JobSpec("j", {"name": "d"}, priority=3, run_after=now - 50))
    _enqueue(store, JobSpec("j", {"name": "e"}, priority=1, run_after=now + 10 * SECOND))
    assert [j.args["name"] for j in store.queue.claim(2)] == ["c", "d"]
    assert [j.args["name"] for j in store.queue.claim(10)] == ["b", "a"]
    clock.advance(11)
    assert [j.args["name"] for j in store.queue.claim(10)] == ["e"]


def test_claim_by_function(store: ports.Store) -> None:
    _enqueue(store, JobSpec("fanout", {}), JobSpec("email", {}), JobSpec("webhook", {}))
    assert [j.func for j in store.queue.claim(10, funcs=["email", "nothing"])] == ["email"]
    assert [j.func for j in store.queue.claim(10, exclude=["fanout"])] == ["webhook"]
    assert [j.func for j in store.queue.claim(10, exclude=[])] == ["fanout"]


def test_a_claim_passes_over_busy_groups(store: ports.Store) -> None:
    """A group (named by the unique key, ``func@group:…``) that is busy is left alone;
    keyless jobs, and keys of no group or of a group merely sharing a prefix, are not."""
    _enqueue(store, JobSpec("hook", {"n": 1}, unique_key=grouped_key("hook", "slow", "1")),
             JobSpec("hook", {"n": 2}, unique_key=grouped_key("hook", "slow", "2")),
             JobSpec("hook", {"n": 3}, unique_key=grouped_key("hook", "slower", "3")),
             JobSpec("hook", {"n": 4}, unique_key="hook:4"),
             JobSpec("hook", {"n": 5}),
             JobSpec("hook", {"n": 6}, unique_key=grouped_key("hook", "a_b%", "6")))
    assert group_of(grouped_key("hook", "slow", "1")) == "hook@slow"
    assert group_of("hook:4") is None and group_of(None) is None
    claimed = store.queue.claim(10, busy=["hook@slow", "hook@a_b%"])
    assert sorted(j.args["n"] for j in claimed) == [3, 4, 5]
    assert sorted(j.args["n"] for j in store.queue.claim(10, busy=["hook@axb%"])) == [1, 2, 6]


def test_a_lease_that_ran_out_passes_to_the_next_claim(store: ports.Store,
                                                       clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("j", {}))
    first = _claim_one(store)
    assert store.queue.still_mine(first) is True
    clock.advance(LEASE - 1)
    assert store.queue.claim(1) == []
    clock.advance(2)
    assert store.queue.still_mine(first) is False  # run out, even before anyone took it
    second = _claim_one(store)
    assert (second.id, second.attempts) == (first.id, 2)
    assert second.token != first.token
    assert store.queue.still_mine(first) is False
    assert write(store, lambda tx: tx.jobs.complete(first)) is False  # a stale token
    assert store.queue.still_mine(second) is True
    assert write(store, lambda tx: tx.jobs.complete(second)) is True
    assert write(store, lambda tx: tx.jobs.complete(second)) is False
    assert store.queue.still_mine(second) is False
    assert store.queue.stats()["queued"] == 0


def test_replace_with_swaps_the_job_for_its_successors(store: ports.Store,
                                                       clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("fanout", {"event": 1}))
    job = _claim_one(store)
    assert write(store, lambda tx: tx.jobs.replace_with(
        job, [JobSpec("chunk", {"n": 1}), JobSpec("chunk", {"n": 2})])) is True
    assert sorted(j.args["n"] for j in store.queue.claim(10)) == [1, 2]
    assert store.queue.stats()["queued"] == 2


def test_replace_with_a_lost_lease_changes_nothing(store: ports.Store,
                                                   clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("fanout", {}))
    lost = _claim_one(store)
    clock.advance(LEASE + 1)
    taken = _claim_one(store)
    assert write(store, lambda tx: tx.jobs.replace_with(lost, [JobSpec("chunk", {})])) is False
    assert store.queue.stats()["queued"] == 1
    assert store.queue.still_mine(taken) is True


def test_a_failed_unit_keeps_its_job_and_enqueues_nothing(store: ports.Store) -> None:
    _enqueue(store, JobSpec("fanout", {}))
    job = _claim_one(store)

    def work(tx: ports.Tx) -> None:
        tx.jobs.enqueue_many([JobSpec("chunk", {"n": 1}), JobSpec("chunk", {"n": 2},
                                                                  unique_key="u")])
        assert tx.jobs.complete(job) is True
        raise RuntimeError("the handler fails after its writes")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert store.queue.still_mine(job) is True
    assert store.queue.stats()["queued"] == 1
    _enqueue(store, JobSpec("chunk", {"n": 3}, unique_key="u"))  # the key was never taken
    assert [j.args for j in store.queue.claim(10)] == [{"n": 3}]


def test_failures_retry_with_exponential_backoff(store: ports.Store,
                                                 clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("flaky", {"n": 1}))
    for attempt in range(1, 4):
        job = _claim_one(store)
        assert job.attempts == attempt
        before = clock.now_us()
        assert store.queue.fail(job, f"boom {attempt}") is True
        after = clock.now_us()
        ceiling = 2 * SECOND * 2 ** (attempt - 1)  # 2 s, 4 s, 8 s; the wait is jittered below
        run_after = store.queue.next_run_after()
        assert run_after is not None and before <= run_after <= after + ceiling
        assert store.queue.stats() == {"queued": 1, "runnable": 0, "running": 0, "failed": 0}
        if run_after > after:
            assert store.queue.claim(1) == []  # not before its time
        clock.advance(ceiling / SECOND + 0.01)
    failures = store.queue.failures()
    assert [(f.error, f.attempt, f.final, f.func, f.args) for f in failures] == [
        (f"boom {n}", n, False, "flaky", {"n": 1}) for n in (3, 2, 1)]
    assert failures[0].failed_at > failures[1].failed_at > failures[2].failed_at
    assert failures[0].job_id == job.id


def test_jobs_failed_in_one_outage_retry_spread_over_the_window(store: ports.Store,
                                                                clock: FrozenClock) -> None:
    """Full jitter: jobs that fail at the same instant do not all come back at the same one."""
    _enqueue(store, *(JobSpec("mail", {"n": n}) for n in range(40)))
    claimed = store.queue.claim(40)
    assert len(claimed) == 40
    for job in claimed:
        assert store.queue.fail(job, "SMTP server down") is True
    now = clock.now_us()
    ceiling = 2 * SECOND  # the first failure's window
    waits = []
    while (due := store.queue.next_run_after()) is not None:
        assert due <= now + ceiling
        waits.append(due - now)
        clock.advance(max(due - clock.now_us(), 0) / SECOND)
        done = store.queue.claim(40)  # all due at this instant; done, so the next is later
        write(store, lambda tx, done=done: tx.jobs.complete_many(done))
    assert len(waits) >= 20  # few of 40 share an instant
    assert min(waits) < ceiling / 4 and max(waits) > 3 * ceiling / 4
    assert store.queue.stats()["queued"] == 0


def test_the_last_attempt_fails_for_good(store: ports.Store, clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("doomed", {}))
    for attempt in range(1, ATTEMPTS + 1):
        job = _claim_one(store)
        assert job.attempts == attempt
        assert store.queue.fail(job, "no") is (attempt < ATTEMPTS)
        clock.advance(3600)
    assert store.queue.claim(1) == []
    assert store.queue.stats() == {"queued": 0, "runnable": 0, "running": 0, "failed": 1}
    assert store.queue.next_run_after() is None
    (final,) = store.queue.failures(final_only=True)
    assert (final.attempt, final.final) == (ATTEMPTS, True)
    assert len(store.queue.failures(limit=100)) == ATTEMPTS
    assert len(store.queue.failures(limit=3)) == 3


def test_a_job_failed_for_good_can_be_queued_again_once(store: ports.Store,
                                                       clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("doomed", {"to": "ann"}))
    for _ in range(ATTEMPTS):
        job = _claim_one(store)
        store.queue.fail(job, "no")
        clock.advance(3600)
    assert store.queue.retry(job.id + 10_000) is False  # no such failure
    assert store.queue.retry(job.id) is True
    assert store.queue.retry(job.id) is False  # retried already: nothing final left
    assert store.queue.stats() == {"queued": 1, "runnable": 1, "running": 0, "failed": 0}
    again = _claim_one(store)
    assert (again.func, again.args, again.attempts) == ("doomed", {"to": "ann"}, 1)
    assert len(store.queue.failures(limit=100)) == ATTEMPTS  # the history stays
    assert store.queue.failures(final_only=True) == []


def test_failing_a_lost_lease_leaves_the_new_claim_alone(store: ports.Store,
                                                         clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("j", {}))
    lost = _claim_one(store)
    clock.advance(LEASE + 1)
    taken = _claim_one(store)
    assert store.queue.fail(lost, "late") is False
    assert store.queue.still_mine(taken) is True
    assert store.queue.failures() == []  # the late failure is not the job's: nothing logged
    assert write(store, lambda tx: tx.jobs.complete(taken)) is True


def test_release_gives_the_job_back_uncounted(store: ports.Store) -> None:
    _enqueue(store, JobSpec("j", {}))
    job = _claim_one(store)
    store.queue.release(job)
    assert store.queue.still_mine(job) is False
    again = _claim_one(store)
    assert (again.id, again.attempts) == (job.id, 1)
    store.queue.release(job)  # a stale release does nothing
    assert store.queue.still_mine(again) is True


def test_stats_and_next_run_after(store: ports.Store, clock: FrozenClock) -> None:
    assert store.queue.stats() == {"queued": 0, "runnable": 0, "running": 0, "failed": 0}
    assert store.queue.next_run_after() is None
    now = clock.now_us()
    _enqueue(store, JobSpec("a", {}, run_after=now - 5), JobSpec("b", {}, run_after=now - 1),
             JobSpec("c", {}, run_after=now + 100 * SECOND))
    assert store.queue.next_run_after() == now - 5
    _claim_one(store)
    assert store.queue.stats() == {"queued": 3, "runnable": 1, "running": 1, "failed": 0}
    assert store.queue.next_run_after() == now - 5  # a leased job still counts


def test_counts_by_func_include_claimed_and_waiting_jobs(store: ports.Store,
                                                         clock: FrozenClock) -> None:
    assert store.queue.counts_by_func() == {}
    _enqueue(store, JobSpec("fanout", {"n": 1}), JobSpec("fanout", {"n": 2}),
             JobSpec("email", {}, run_after=clock.now_us() + 100 * SECOND))
    fanout = _claim_one(store, funcs=["fanout"])
    assert store.queue.counts_by_func() == {"fanout": 2, "email": 1}
    assert write(store, lambda tx: tx.jobs.complete(fanout)) is True
    assert store.queue.counts_by_func() == {"fanout": 1, "email": 1}


def test_cancel_drops_unclaimed_jobs_by_key_prefix(store: ports.Store) -> None:
    _enqueue(store, JobSpec("email_send", {"k": 1}, unique_key="email:1:bob", priority=1),
             JobSpec("email_send", {"k": 2}, unique_key="email:1:ann"),
             JobSpec("email_send", {"k": 3}, unique_key="email:12:ann"),
             JobSpec("email_send", {"k": 4}),
             JobSpec("webhook", {"k": 5}, unique_key="email:1:cat"),
             JobSpec("email_send", {"k": 6}, unique_key="emailx1:dan"),
             JobSpec("email_send", {"k": 7}, unique_key="a_b:1"),
             JobSpec("email_send", {"k": 8}, unique_key="axb:1"))
    claimed = _claim_one(store, funcs=["email_send"])
    assert claimed.unique_key == "email:1:bob"
    assert write(store, lambda tx: tx.jobs.cancel("email_send", "email:1:")) == 1
    assert write(store, lambda tx: tx.jobs.cancel("email_send", "a_b:")) == 1  # "_" is no wildcard
    assert write(store, lambda tx: tx.jobs.cancel("email_send", "nothing")) == 0
    assert sorted(j.args["k"] for j in store.queue.claim(10)) == [3, 4, 5, 6, 8]
    assert store.queue.still_mine(claimed) is True


def test_an_exact_cancel_drops_only_that_key(store: ports.Store) -> None:
    _enqueue(store, JobSpec("email_send", {"k": 1}, unique_key="email:1:bob"),
             JobSpec("email_send", {"k": 2}, unique_key="email:1:bobby"),
             JobSpec("email_send", {"k": 3}, unique_key="email:1:b%"))
    assert write(store, lambda tx: tx.jobs.cancel("email_send", "email:1:bob", exact=True)) == 1
    assert write(store, lambda tx: tx.jobs.cancel("email_send", "email:1:b", exact=True)) == 0
    assert sorted(j.args["k"] for j in store.queue.claim(10)) == [2, 3]


def test_recorded_failures_are_listed(store: ports.Store, clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("webhook", {"url": "https://x.example"}))
    job = _claim_one(store)
    write(store, lambda tx: tx.jobs.record_failure(job, "answered 500", final=False,
                                                   now=clock.now_us()))
    write(store, lambda tx: tx.jobs.record_failure(job, "x" * 5000, final=True,
                                                   now=clock.now_us()))
    latest, first = store.queue.failures()
    assert (first.error, first.final, first.func, first.job_id) == (
        "answered 500", False, "webhook", job.id)
    assert first.args == {"url": "https://x.example"}
    assert latest.final is True and latest.error.startswith("xxx")
    assert store.queue.stats()["failed"] == 1
    assert store.queue.failures(final_only=True) == [latest]


def test_the_enqueue_hook_hears_of_every_enqueue(store: ports.Store) -> None:
    heard: list[int] = []
    store.on_enqueue = heard.append
    _enqueue(store, JobSpec("a", {}), JobSpec("b", {}))
    _enqueue(store)
    _enqueue(store, JobSpec("c", {}))
    assert heard == [2, 1]


def test_concurrent_claims_never_share_a_job(store: ports.Store) -> None:
    _enqueue(store, *[JobSpec("j", {"n": n}) for n in range(60)])
    claimed: Counter[int] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while jobs := store.queue.claim(4):
                with lock:
                    claimed.update(j.id for j in jobs)
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(claimed) == 60 and set(claimed.values()) == {1}


def test_complete_many_removes_a_claim_in_one_go(store: ports.Store, clock: FrozenClock) -> None:
    _enqueue(store, *(JobSpec("fanout", {"n": n}) for n in range(4)))
    jobs = store.queue.claim(3)
    assert write(store, lambda tx: tx.jobs.complete_many(jobs)) is True
    assert store.queue.stats()["queued"] == 1
    assert write(store, lambda tx: tx.jobs.complete_many([])) is True


def test_complete_many_with_a_lost_lease_says_so(store: ports.Store, clock: FrozenClock) -> None:
    _enqueue(store, JobSpec("fanout", {"n": 1}), JobSpec("fanout", {"n": 2}))
    lost = store.queue.claim(2)
    clock.advance(LEASE + 1)
    taken = _claim_one(store)
    assert write(store, lambda tx: tx.jobs.complete_many(lost)) is False
    assert store.queue.still_mine(taken) is True  # the new claim's job is left alone
