"""A separate ``tidings worker`` knows the types the application declared, and an event of a type
it cannot know fails its job visibly instead of reaching its explicit recipients only.

Regression: types given to ``Tidings.open(..., types=[...])`` (the README's ten lines) lived in
that process only. A ``tidings worker`` started beside it fell back to "recipients only" for
their events, completed the job and logged nothing: subscribers and followers silently got
nothing. Now a process stores the types it declares when it first reads the types, and a
fan-out of a type nobody can read is a job failure (retried, then recorded), logged and counted.

The worker is a real ``tidings worker`` subprocess on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tidings
from engines import open_tidings
from servers import wait_for
from stores import SqlStores
from tidings import Event, EventType, Templates, Tidings
from tidings.clock import FrozenClock

SRC = str(Path(tidings.__file__).resolve().parents[1])
LINKED = EventType(
    "page-linked", category="links", bundle="object",
    audience=("object_subscribers", "actor_followers"),
    templates=Templates(title="{{ object_title }} was linked by {{ actors_text }}"))
# a stored definition this version cannot read (a key from a later version): skipped on load
UNREADABLE = json.dumps({"category": "links", "audience": ["object_subscribers"],
                         "from_a_later_version": True})


@pytest.fixture(params=["sqlite", "postgresql"])
def worker_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A clean database at head for the application and its separate worker."""
    stores: SqlStores = request.getfixturevalue(f"{request.param}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


class WorkerProcess:
    """One ``tidings worker`` subprocess with no types of its own (no types file)."""

    def __init__(self, url: str, log: Path) -> None:
        path = os.environ.get("PYTHONPATH")
        env = {key: value for key, value in os.environ.items()
               if not key.startswith("TIDINGS_")}
        env.update({"PYTHONPATH": SRC + (os.pathsep + path if path else ""),
                    "TIDINGS_DATABASE_URL": url, "TIDINGS_JOB_MAX_ATTEMPTS": "2",
                    "TIDINGS_JOB_BACKOFF_SECONDS": "0.05"})
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tidings.cli", "worker", "--poll", "0.05"],
                env=env, stdout=out, stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        deadline = time.monotonic() + 30  # a SIGTERM before its handler would kill it
        while (self.process.poll() is None and time.monotonic() < deadline
               and "worker started" not in self.text()):
            time.sleep(0.05)
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def test_a_separate_worker_fans_out_by_the_types_declared_in_code(
        worker_url: str, tmp_path: Path) -> None:
    # the README's ten lines, with `tidings worker` in another process instead of run_jobs()
    with Tidings.open(worker_url, types=[LINKED]) as t:
        t.subscribe("bob", "page-linked", "page:San_Francisco")
        t.follow("erin", "dave")
        for actor in ("alice", "carol", "dave"):
            t.publish(Event("page-linked", actor=actor, object="page:San_Francisco"))
        worker = WorkerProcess(worker_url, tmp_path / "worker.log")
        try:
            delivered = wait_for(lambda: (t.notifications("bob").items
                                          and t.notifications("erin").items), timeout=30)
            assert delivered, worker.text()
        finally:
            assert worker.stop() == 0, worker.text()

        assert t.notifications("bob").items[0].title == (
            "San Francisco was linked by dave and 2 others")
        assert [n.actor for n in t.notifications("erin").items] == ["dave"]
        assert t.queue.failures() == []


def test_an_event_of_a_type_the_worker_cannot_read_fails_its_job_visibly(
        worker_url: str, tmp_path: Path) -> None:
    with Tidings.open(worker_url, types=[LINKED]) as t:
        t.subscribe("bob", "page-linked", "page:San_Francisco")
        published = t.publish(Event("page-linked", actor="alice", object="page:San_Francisco",
                                    recipients=["cid"]))
        # the stored copy is one the worker cannot read (written by a later version, say)
        t.store.transact(lambda tx: tx.settings.save_type("page-linked", UNREADABLE, 1))
        worker = WorkerProcess(worker_url, tmp_path / "worker.log")
        try:
            failed = wait_for(lambda: t.queue.failures(final_only=True), timeout=30)
            assert failed, worker.text()
        finally:
            assert worker.stop() == 0, worker.text()
        attempts = t.queue.failures()
        assert [(f.func, f.attempt, f.final) for f in attempts] == [
            ("fanout", 2, True), ("fanout", 1, False)]  # retried, then failed for good
        assert "'page-linked'" in attempts[0].error and published.id in attempts[0].error
        # nobody got a partial delivery: not even the explicit recipient
        assert t.notifications("bob").items == [] and t.notifications("cid").items == []
    log = worker.text()
    assert "failed" in log and "'page-linked'" in log, log


def test_an_unknown_type_is_retried_then_failed_and_counted(
        any_store_url: str, clock: FrozenClock) -> None:
    retries = {"job_max_attempts": 2, "job_backoff_seconds": 1.0}  # the memory store: the first's
    with open_tidings(any_store_url, types=(LINKED,), clock=clock, **retries) as app:
        app.subscribe("bob", "page-linked", "page:San_Francisco")
        app.publish(Event("page-linked", actor="alice", object="page:San_Francisco",
                          recipients=["cid"]))
        app.store.transact(lambda tx: tx.settings.save_type("page-linked", UNREADABLE, 1))
        worker = open_tidings(any_store_url, types=(), clock=clock, **retries)

        worker.run_jobs()
        clock.advance(seconds=60)
        worker.run_jobs()

        assert worker.counters.jobs == {"retried": 1, "failed": 1}
        assert [(f.attempt, f.final) for f in worker.queue.failures()] == [(2, True),
                                                                            (1, False)]
        assert "page-linked" in worker.queue.failures()[0].error
        assert app.notifications("bob").items == [] and app.notifications("cid").items == []
        worker.close()
