"""Webhooks can never starve fan-out: deliveries run on worker threads of their own, and a
circuit breaker per endpoint (kept in the store, shared by every worker) pauses a failing one
without using up its jobs' attempts."""

from __future__ import annotations

import json
import time
from collections import Counter

from hooks import SECRET, RawServer, Receiver, deliveries, hold, make, queued
from servers import serve, wait_for
from tidings.api.app import create_app
from tidings.channels.webhook import BREAKER_THRESHOLD
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.jobs.lanes import Lane
from tidings.jobs.worker import WORKER_BATCH

pytest_plugins = ["hooks"]

SECOND = 1_000_000


def _attempts(t: Tidings) -> Counter[int]:
    """How many queued webhook jobs are at each attempt."""
    return Counter(int(json.loads(job.args).get("attempt", 1)) for job in queued(t))


def _breaker(t: Tidings, host: str = "127.0.0.1") -> tuple[int, int] | None:
    with t.store.read() as tx:
        return tx.mail.webhook_endpoint(host)


def _paused(t: Tidings, failures: int, seconds: int) -> bool:
    """The breaker holds ``failures`` and a pause that ends ``seconds`` from now (the frozen
    clock ticks a microsecond per reading)."""
    state = _breaker(t)
    now = t.clock.now_us()
    return (state is not None and state[0] == failures
            and 0 <= now + seconds * SECOND - state[1] < SECOND)


def _publish(t: Tidings, count: int, to: str = "bob") -> None:
    for i in range(count):
        t.publish(Event("mention", actor="alice", recipients=[to], payload={"n": i}))


def test_a_failing_endpoint_is_paused_without_using_up_attempts(hook_store: str) -> None:
    t, clock = make(hook_store)
    with Receiver([503] * 100) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        _publish(t, BREAKER_THRESHOLD + 2)
        t.run_jobs()
        # five failures open the breaker; the other two jobs wait for the pause, unsent
        assert len(receiver.requests) == BREAKER_THRESHOLD
        assert _paused(t, BREAKER_THRESHOLD, 30)
        assert _attempts(t) == {2: BREAKER_THRESHOLD, 1: 2}

        clock.advance(10)  # past the retries' backoff, inside the pause: they wait again
        t.run_jobs()
        assert len(receiver.requests) == BREAKER_THRESHOLD
        assert _attempts(t) == {2: BREAKER_THRESHOLD, 1: 2}

        clock.advance(21)  # the pause is over: one probe fails, the pause doubles
        t.run_jobs()
        assert len(receiver.requests) == BREAKER_THRESHOLD + 1
        assert _paused(t, BREAKER_THRESHOLD + 1, 60)
        clock.advance(31)
        t.run_jobs()
        assert len(receiver.requests) == BREAKER_THRESHOLD + 1
        clock.advance(30)  # another probe, another failure: two minutes now
        t.run_jobs()
        assert len(receiver.requests) == BREAKER_THRESHOLD + 2
        assert _paused(t, BREAKER_THRESHOLD + 2, 120)
        # the jobs that never reached the endpoint kept their attempts through three pauses
        assert _attempts(t)[1] == 2

        receiver.statuses = []  # the endpoint recovers
        clock.advance(121)
        t.run_jobs()
    assert _breaker(t) is None and queued(t) == []
    delivered = [r for r in deliveries(t) if r.status == 200]
    assert len(delivered) == BREAKER_THRESHOLD + 2  # every event, once
    assert sorted(r.attempt for r in delivered).count(1) == 2
    assert t.queue.failures(final_only=True) == []
    t.close()


def test_the_pause_is_shared_by_every_worker(hook_store: str) -> None:
    t, clock = make(hook_store)
    other, _clock = make(hook_store, clock=clock)
    with Receiver([500] * 100) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        _publish(t, BREAKER_THRESHOLD)
        t.run_jobs()
        assert len(receiver.requests) == BREAKER_THRESHOLD
        _publish(t, 1)
        other.run_jobs()  # another worker: sees the pause in the store, sends nothing
        assert len(receiver.requests) == BREAKER_THRESHOLD
        assert _attempts(other) == {2: BREAKER_THRESHOLD, 1: 1}
    other.close()
    t.close()


def test_answers_about_one_url_do_not_trip_the_breaker(hook_store: str) -> None:
    t, clock = make(hook_store)
    with Receiver([404] * 100) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        _publish(t, BREAKER_THRESHOLD + 2)
        t.run_jobs()
        clock.advance(2.1)
        t.run_jobs()  # retried after the usual backoff: the host answers, it is not paused
        assert len(receiver.requests) == 2 * (BREAKER_THRESHOLD + 2)
    assert _breaker(t) is None
    t.close()


def test_webhooks_run_on_threads_of_their_own(hook_store: str) -> None:
    t, _clock = make(hook_store)
    # fan-out jobs are claimed in batches on the jobs lane; a webhook is claimed alone
    assert t.worker(concurrency=3).lanes == [
        Lane("jobs", 3, exclude=("webhook",), batch=WORKER_BATCH),
        Lane("webhooks", 4, funcs=("webhook",), batch=1, per_group=2)]
    assert [lane.threads for lane in t.worker(webhook_concurrency=4).lanes] == [1, 4]
    assert t.worker(webhook_concurrency=0).lanes == [
        Lane("jobs", 1, exclude=("webhook",), batch=WORKER_BATCH)]
    t.close()
    from_env = Tidings(Config.from_env({"TIDINGS_DATABASE_URL": hook_store,
                                        "TIDINGS_WEBHOOK_CONCURRENCY": "2"}))
    assert [lane.threads for lane in from_env.worker().lanes] == [1, 2]
    from_env.close()


def test_a_silent_receiver_does_not_delay_a_bystanders_notification(hook_store: str) -> None:
    """The server's own worker, default settings: mallory's receiver accepts and never
    answers, and ten deliveries to it wait; bob's notification does not wait for them."""
    config = Config(database_url=hook_store, webhook_secret="x" * 32,
                    webhook_allow=("127.0.0.1",))
    types = [EventType("mention", channels=("web", "webhook"), audience=("recipients",)),
             EventType("comment", audience=("recipients",))]  # fan-out after webhooks (5 > 4)
    with RawServer(hold) as silent, Tidings(config, types=types) as t:
        t.set_preferences("mallory", {"webhook": {"url": silent.url}})
        _publish(t, 10, to="mallory")
        app = create_app(t, api_keys=("test-server-key-0123456789",), token_secret=None,
                         run_worker=True)
        with serve(app):
            assert wait_for(lambda: silent.accepted >= 1, timeout=30)  # a delivery hangs
            t.publish(Event("comment", actor="alice", recipients=["bob"]))
            assert wait_for(lambda: t.unread_count("bob").count == 1, timeout=30)
            waiting = len(queued(t))
            answered = silent.accepted
        assert waiting >= 9 and answered <= 2  # bob's came before the webhooks' backlog
        assert t.unread_count("mallory").count == 10


def test_a_host_that_never_answers_does_not_hold_up_another_hosts_deliveries(
        hook_store: str) -> None:
    """A worker with default settings: eight deliveries to a receiver that accepts and never
    answers take only their host's share of the webhook threads; bob's webhook to another
    host goes out at once, not after their read timeouts."""
    t = Tidings(Config(database_url=hook_store, webhook_secret=SECRET,
                       webhook_allow=("127.0.0.1", "127.0.0.2"), webhook_read_timeout=2.0),
                types=[EventType("mention", channels=("web", "webhook"),
                                 audience=("recipients",))])
    with RawServer(hold) as silent, Receiver([], host="127.0.0.2") as answering:
        t.set_preferences("mallory", {"webhook": {"url": silent.url}})
        t.set_preferences("bob", {"webhook": {"url": answering.url}})
        _publish(t, 8, to="mallory")
        worker = t.worker()
        worker.start()
        try:
            assert wait_for(lambda: silent.accepted >= 1, timeout=10)  # deliveries hang
            started = time.monotonic()
            _publish(t, 1, to="bob")
            assert wait_for(lambda: answering.requests, timeout=10)
            waited = time.monotonic() - started
            held = silent.accepted
        finally:
            worker.stop()
            t.close()
    assert waited < 1.5, f"bob's webhook waited {waited:.1f} s for another host's"
    assert held <= 2  # the silent host had at most its share of the threads
