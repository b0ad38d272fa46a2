"""Worker processes killed with SIGKILL at random moments lose nothing and double nothing.

120 events, each to 300 subscribers, are fanned out by real ``tidings worker`` processes while
the test kills one with SIGKILL every second or so and starts a new one. The chunk size is 100,
so every event's ``fanout`` job is replaced by three ``fanout_chunk`` jobs and kills land in
both kinds. The lease is 2 s, so a killed worker's jobs are taken again quickly. After the
queue drains, every (user, event) notification is there exactly once, the job table is empty
and no job failed for good.

SQLite has one writer, so one worker process runs at a time there; PostgreSQL and MariaDB run
two, which claim with ``SKIP LOCKED``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import tidings
from engines import keys_of
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.fanout.specs import FANOUT_CHUNK

pytestmark = pytest.mark.slow

EVENTS = 120
SUBSCRIBERS = 300
CHUNK = 100
LEASE_SECONDS = 2
KILLS = 8
PUBLISH_SECONDS = 8.0  # publishing is spread out so the kills land while work keeps arriving
TYPE = "fault.ping"
OBJECT = "board:fault"
DRAIN_TIMEOUT = 120.0
SRC = str(Path(tidings.__file__).resolve().parents[1])


class Workers:
    """``tidings worker`` subprocesses that can be killed and replaced."""

    def __init__(self, url: str, logs: Path) -> None:
        path = os.environ.get("PYTHONPATH")
        self.env = {
            **os.environ,
            "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
            "TIDINGS_DATABASE_URL": url,
            "TIDINGS_CHUNK_SIZE": str(CHUNK),
            "TIDINGS_JOB_LEASE_SECONDS": str(LEASE_SECONDS),
            "TIDINGS_JOB_BACKOFF_SECONDS": "0.2",
        }
        self.logs = logs
        self.running: list[subprocess.Popen[bytes]] = []
        self.log_of: dict[int, Path] = {}  # by pid
        self.started = 0

    def start(self) -> None:
        path = self.logs / f"worker-{self.started}.log"
        log = path.open("wb")
        self.started += 1
        proc = subprocess.Popen(
            [sys.executable, "-m", "tidings.cli", "worker", "--poll", "0.05"],
            env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()  # the child holds its own descriptor
        self.running.append(proc)
        self.log_of[proc.pid] = path

    def kill_one(self, rng: random.Random) -> None:
        """SIGKILL a random worker (no chance to release its jobs) and start another."""
        victim = self.running.pop(rng.randrange(len(self.running)))
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        self.start()

    def check_alive(self) -> None:
        for proc in self.running:
            assert proc.poll() is None, f"a worker exited with {proc.returncode}\n{self.tail()}"

    def stop(self) -> list[int | None]:
        """SIGTERM every worker (a graceful stop) and return their exit codes. A worker still
        starting is given until its start line: a SIGTERM before its handler is installed
        would end it by the signal's default action (-15), not by a graceful stop."""
        deadline = time.monotonic() + 30
        for proc in self.running:
            while (proc.poll() is None and time.monotonic() < deadline
                   and b"worker started" not in self.log_of[proc.pid].read_bytes()):
                time.sleep(0.05)
        for proc in self.running:
            proc.send_signal(signal.SIGTERM)
        codes: list[int | None] = []
        for proc in self.running:
            try:
                codes.append(proc.wait(timeout=30))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                codes.append(None)
        self.running.clear()
        return codes

    def tail(self, lines: int = 15) -> str:
        parts = []
        for path in sorted(self.logs.glob("worker-*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts[-3:])


@pytest.fixture
def workers(store_url: str, tmp_path: Path) -> Iterator[Workers]:
    group = Workers(store_url, tmp_path)
    yield group
    group.stop()  # also after a failure: no process outlives its test


def queue_by_func(t: Tidings) -> dict[str, int]:
    return t.queue.counts_by_func()


def delivered(t: Tidings) -> int:
    return len(keys_of(t))


def test_sigkilled_workers_lose_and_double_nothing(
    store_url: str, backend: str, workers: Workers
) -> None:
    rng = random.Random(20240611)
    t = Tidings(Config(database_url=store_url, chunk_size=CHUNK))
    try:
        # Stored with the schema, so the worker processes read it at start-up.
        t.define_type(EventType(TYPE, audience=("object_subscribers",)))
        expected_users = [f"fan{i:04d}" for i in range(SUBSCRIBERS)]
        for user in expected_users:
            t.subscribe(user, TYPE, OBJECT)

        for _ in range(1 if backend == "sqlite" else 2):
            workers.start()

        kills = 0
        kills_with_work = 0
        saw_chunks = False
        published: list[int] = []
        next_kill = time.monotonic() + rng.uniform(0.5, 1.5)
        deadline = time.monotonic() + DRAIN_TIMEOUT
        # Publish while killing; keep killing after the last publish while work remains.
        while len(published) < EVENTS or (kills < KILLS and queue_by_func(t)):
            assert time.monotonic() < deadline, f"stuck after {kills} kills\n{workers.tail()}"
            if len(published) < EVENTS:
                result = t.publish(Event(TYPE, actor="poster", object=OBJECT,
                                         payload={"n": len(published)}))
                published.append(int(result.id))
                time.sleep(PUBLISH_SECONDS / EVENTS)
            else:
                time.sleep(0.05)
            if not saw_chunks:  # looked at often: chunk jobs may live a fraction of a second
                saw_chunks = FANOUT_CHUNK in queue_by_func(t)
            if time.monotonic() >= next_kill and kills < KILLS:
                queued = queue_by_func(t)
                if not queued and len(published) < EVENTS:
                    # the workers keep up between publishes on a quiet box: the kill waits
                    # for a moment with work queued, looked for every 50 ms
                    next_kill = time.monotonic() + 0.05
                    continue
                kills_with_work += bool(queued)
                workers.kill_one(rng)
                kills += 1
                next_kill = time.monotonic() + rng.uniform(0.3, 1.5)

        # Drain with healthy workers; a killed worker's leases run out within LEASE_SECONDS.
        # A job leaves the table in the transaction that writes its notifications, so an
        # empty table means every write that will ever happen has been committed.
        # On a loaded machine every kill can land before the publishing ends and before a
        # fan-out job was split: the chunk jobs are then seen here.
        expected = EVENTS * SUBSCRIBERS
        while queued := queue_by_func(t):
            assert time.monotonic() < deadline, (
                f"not drained: {delivered(t)}/{expected} delivered, queue {queued}\n"
                f"{workers.tail()}")
            saw_chunks = saw_chunks or FANOUT_CHUNK in queued
            workers.check_alive()
            time.sleep(0.2)
        assert workers.stop() == [0] * (1 if backend == "sqlite" else 2)
        # A worker schedules the retention sweep as it starts: one started by the last kill
        # may have done so after the queue was seen empty, and stopped before running it.
        assert queue_by_func(t) in ({}, {"retention": 1})
        t.run_jobs()

        assert kills_with_work >= KILLS // 2, (
            f"only {kills_with_work} of {kills} kills landed while jobs were queued")
        assert saw_chunks, "the chunked (replace_with) fan-out path was not exercised"
        keys = keys_of(t)
        total = len(keys)
        doubled = [pair for pair, n in Counter((k.user_id, k.event_id) for k in keys).items()
                   if n > 1][:5]
        per_event = dict(Counter(k.event_id for k in keys))
        users = {k.user_id for k in keys}
        left = sum(t.queue.counts_by_func().values())
        final_failures = [(f.func, f.error) for f in t.queue.failures(limit=5, final_only=True)]
        assert total == expected
        assert doubled == []
        assert per_event == dict.fromkeys(published, SUBSCRIBERS)
        assert users == set(expected_users)
        assert left == 0
        assert final_failures == []
        assert t.queue.stats() == {"queued": 0, "runnable": 0, "running": 0, "failed": 0}
    finally:
        t.close()
