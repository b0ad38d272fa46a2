"""Network I/O of channel jobs runs outside any unit of work: a slow receiver holds no database
lock, and a job whose lease was lost before sending does not send."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from engines import enqueue, open_tidings
from tidings.clock import FrozenClock
from tidings.engine import Tidings
from tidings.jobs.context import Handler, JobContext
from tidings.jobs.model import Job, JobSpec
from tidings.ports import Tx

LEASE = 30.0


@pytest.fixture
def t(any_store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(any_store_url, clock=clock, lease_seconds=LEASE) as tidings:
        yield tidings


class SlowSend:
    """A two-phase handler whose send waits until the test lets it go."""

    def __init__(self) -> None:
        self.sending = threading.Event()
        self.release = threading.Event()
        self.sent: list[str] = []

    def prepare(self, ctx: JobContext, tx: Tx, job: Job) -> str:
        return str(job.args["user"])

    def send(self, ctx: JobContext, user: str) -> str:
        self.sending.set()
        assert self.release.wait(30), "the test never released the send"
        self.sent.append(user)
        return "ok"

    def finish(self, ctx: JobContext, tx: Tx, job: Job, user: str, outcome: Any) -> None:
        tx.graph.add_user(user, ctx.clock.now_us())

    def handler(self) -> Handler:
        return Handler(prepare=self.prepare, send=self.send, finish=self.finish)


def test_a_slow_send_holds_no_lock_on_the_store(t: Tidings) -> None:
    """While a send is in flight another writer commits. On SQLite a send inside a write
    transaction would hold the single writer lock and make the publish wait; PostgreSQL and
    MariaDB run it too, for the rest of the path."""
    slow = SlowSend()
    t.handlers["slow"] = slow.handler()
    enqueue(t, JobSpec("slow", {"user": "bob"}))
    runner = threading.Thread(target=t.run_jobs, daemon=True)
    runner.start()
    assert slow.sending.wait(30)

    published: list[str] = []
    writer = threading.Thread(target=lambda: published.append(
        t.publish({"type": "mention", "actor": "alice", "recipients": ["carol"]}).id),
        daemon=True)
    writer.start()
    writer.join(20)
    finished_while_sending = not writer.is_alive()
    slow.release.set()
    runner.join(30)
    writer.join(30)

    assert finished_while_sending, "a write waited for a network send"
    assert published and slow.sent == ["bob"]
    assert t.queue.stats()["queued"] == 0
    t.run_jobs()
    assert t.unread_count("carol").count == 1


def test_a_job_whose_lease_was_lost_before_sending_does_not_send(
        t: Tidings, clock: FrozenClock) -> None:
    slow = SlowSend()
    slow.release.set()
    t.handlers["slow"] = slow.handler()
    enqueue(t, JobSpec("slow", {"user": "bob"}))
    (stale,) = t.queue.claim(1)
    clock.advance(LEASE + 1)
    (fresh,) = t.queue.claim(1)
    worker = t.worker()

    assert worker.run_job(stale) is False
    assert slow.sent == []
    assert worker.run_job(fresh) is True
    assert slow.sent == ["bob"]
    assert t.queue.stats()["queued"] == 0
