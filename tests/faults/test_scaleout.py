"""The README's scale-out topology, run for real, is observable and keeps its limits.

PostgreSQL, two ``tidings serve --no-worker --workers 2`` (four API processes) and two
``tidings worker --metrics-port``: the ``/metrics`` of the four scrape targets, summed, equal
the work done (events accepted, inbox rows written, jobs queued and run), and a flood of
publishes spread over every API process gets through one server key's budget once — one
burst and its refill, not one per process — each refusal with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import tidings
from engines import keys_of
from live import free_port
from stores import PostgresStores
from tidings.config import Config
from tidings.engine import Tidings

pytestmark = pytest.mark.slow
SRC = str(Path(tidings.__file__).resolve().parents[1])
WORK_KEY, FLOOD_KEY = "work-key-0123456789", "flood-key-0123456789"
RATE = 10  # TIDINGS_RATE_LIMIT: a bucket of 20 events per key
EVENTS = 12  # published one by one with the work key, to both servers in turn
RECIPIENTS = ["ann", "bob", "cy"]
FLOOD = 120  # concurrent publishes with the flood key, over both servers


@pytest.fixture
def postgres_url(postgresql_stores: PostgresStores) -> Iterator[str]:
    url = postgresql_stores.clone()
    yield url
    postgresql_stores.drop(url)


class Topology:
    """The processes of the README's "Scaling out", on loopback ports."""

    def __init__(self, url: str, logs: Path) -> None:
        path = os.environ.get("PYTHONPATH")
        self.env = {
            **{k: v for k, v in os.environ.items()
               if not k.startswith(("TIDINGS_", "PROMETHEUS_"))},
            "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
            "TIDINGS_DATABASE_URL": url, "TIDINGS_API_KEY": f"{WORK_KEY},{FLOOD_KEY}",
            "TIDINGS_RATE_LIMIT": str(RATE),
        }
        self.logs = logs
        self.processes: list[subprocess.Popen[bytes]] = []
        self.api = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
        self.workers = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]

    def _start(self, name: str, *args: str) -> None:
        with (self.logs / f"{name}.log").open("wb") as log:
            self.processes.append(subprocess.Popen(
                [sys.executable, "-m", "tidings.cli", *args], env=self.env, stdout=log,
                stderr=subprocess.STDOUT))

    def start(self) -> None:
        for i, base in enumerate(self.api):
            self._start(f"serve-{i}", "serve", "--no-worker", "--workers", "2",
                        "--port", base.rsplit(":", 1)[1])
        for i, base in enumerate(self.workers):
            self._start(f"worker-{i}", "worker", "--poll", "0.05",
                        "--metrics-port", base.rsplit(":", 1)[1])
        deadline = time.monotonic() + 150  # a loaded host starts eight Pythons slowly
        for base, path in [*((b, "/readyz") for b in self.api),
                           *((b, "/metrics") for b in self.workers)]:
            while not _answers(base + path):
                assert time.monotonic() < deadline, self.tail()
                assert all(p.poll() is None for p in self.processes), self.tail()
                time.sleep(0.1)

    def stop(self) -> list[int | None]:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes: list[int | None] = []
        for process in self.processes:
            try:
                codes.append(process.wait(timeout=30))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                codes.append(None)
        return codes

    def tail(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                         for p in sorted(self.logs.glob("*.log")))

    def scrape(self) -> list[dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
        """Every scrape target's samples: (name, labels) -> value."""
        found = []
        for base in [*self.api, *self.workers]:
            body = httpx.get(base + "/metrics", timeout=10).text
            found.append({(s.name, tuple(sorted(s.labels.items()))): s.value
                          for family in text_string_to_metric_families(body)
                          for s in family.samples})
        return found


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def total(scrapes: list[dict[tuple[str, tuple[tuple[str, str], ...]], float]], name: str,
          **labels: str) -> float:
    """The sum of ``name``'s samples with ``labels`` over every target."""
    wanted = set(labels.items())
    return sum(value for scrape in scrapes for (sample, found), value in scrape.items()
               if sample == name and wanted <= set(found))


def wait_for(check: Callable[[], bool], seconds: float = 30, *, strict: bool = True) -> None:
    """Until ``check()`` holds; past ``seconds``, fail (``strict``) or return and let the
    caller's assertions say what is wrong."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            assert not strict, "timed out"
            return
        time.sleep(0.2)


async def flood(bases: list[str]) -> tuple[list[httpx.Response], float]:
    """FLOOD publishes at once, over both servers (and so over their processes)."""
    headers = {"Authorization": f"Bearer {FLOOD_KEY}"}
    body = {"type": "mention", "actor": "flood", "recipients": ["zed"]}
    limits = httpx.Limits(max_connections=FLOOD)
    async with httpx.AsyncClient(headers=headers, timeout=30, limits=limits) as client:
        started = time.monotonic()
        answers = await asyncio.gather(*(client.post(bases[i % 2] + "/v1/events", json=body)
                                         for i in range(FLOOD)))
        return list(answers), time.monotonic() - started


def test_metrics_sum_to_the_work_and_the_rate_limit_is_one_budget(
        postgres_url: str, tmp_path: Path) -> None:
    topology = Topology(postgres_url, tmp_path)
    try:
        topology.start()
        work = {"Authorization": f"Bearer {WORK_KEY}"}
        assert httpx.put(topology.api[0] + "/v1/types/mention", headers=work, json={
            "audience": ["recipients"]}).status_code in (200, 201)
        for i in range(EVENTS):
            answer = httpx.post(topology.api[i % 2] + "/v1/events", headers=work, json={
                "type": "mention", "actor": f"actor{i}", "recipients": RECIPIENTS})
            assert answer.status_code == 202, answer.text

        answers, seconds = asyncio.run(flood(topology.api))
        statuses = [a.status_code for a in answers]
        assert set(statuses) <= {202, 429}, statuses
        passed = statuses.count(202)
        # one bucket: its burst and what it refilled meanwhile (one per process would let
        # through four times the burst)
        assert 0 < passed <= 2 * RATE + RATE * seconds + 1, (passed, seconds)
        assert all(int(a.headers["Retry-After"]) >= 1 for a in answers if a.status_code == 429)

        with Tidings(Config(database_url=postgres_url)) as look:
            wait_for(lambda: sum(look.queue.counts_by_func().values()) == 0)
            rows = len(keys_of(look))
        accepted = EVENTS + passed
        assert rows == EVENTS * len(RECIPIENTS) + passed

        def summed() -> bool:  # a job's completion is counted just after its commit
            scrapes = topology.scrape()
            return (total(scrapes, "tidings_jobs_total", outcome="completed")
                    == total(scrapes, "tidings_jobs_total", outcome="queued"))

        wait_for(summed, 10, strict=False)
        scrapes = topology.scrape()
        assert total(scrapes, "tidings_events_accepted_total") == accepted
        assert total(scrapes, "tidings_notifications_written_total") == rows
        assert total(scrapes, "tidings_deliveries_total", channel="web",
                     outcome="delivered") == rows
        assert total(scrapes, "tidings_publish_to_visible_seconds_count") == accepted
        assert total(scrapes, "tidings_jobs_total", outcome="completed") == total(
            scrapes, "tidings_jobs_total", outcome="queued")
        completed = total(scrapes, "tidings_jobs_total", outcome="completed")
        assert completed >= accepted  # a fan-out job per event, and what they queued
        assert total(scrapes, "tidings_jobs_total", outcome="failed") == 0
        api, workers = scrapes[:2], scrapes[2:]
        assert total(workers, "tidings_notifications_written_total") == rows  # the workers'
        assert total(api, "tidings_events_accepted_total") == accepted
        # each API server's scrape sums its two processes: the same answer every time
        again = topology.scrape()[:2]
        assert [total([s], "tidings_events_accepted_total") for s in api] == [
            total([s], "tidings_events_accepted_total") for s in again]
        for scrape in scrapes:  # the queue's figures, read from the queue by every target
            assert total([scrape], "tidings_queue_up") == 1
            assert total([scrape], "tidings_oldest_runnable_job_age_seconds") == 0
            assert total([scrape], "tidings_jobs_waiting") == 0
    finally:
        codes = topology.stop()
    assert codes == [0, 0, 0, 0], topology.tail()
