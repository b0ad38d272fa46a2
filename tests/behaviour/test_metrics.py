"""Metrics (``tidings.metrics``): the queue's figures read at scrape time on every store, the
sum over processes sharing a directory, and a dashboard built from metrics that exist.

The whole topology (two API servers of two processes, two workers) is
``tests/faults/test_scaleout.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from engines import open_tidings
from servers import LiveServer
from tidings.clock import FrozenClock
from tidings.metrics import Metrics
from tidings.observe import Observer

pytest_plugins = ["servers"]

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_queues_figures_per_function_are_read_when_scraped(any_store_url: str) -> None:
    clock = FrozenClock()
    with open_tidings(any_store_url, clock=clock, job_max_attempts=1) as t:
        metrics = Metrics(queue=t.queue.figures)
        metrics.queue.max_age = 0  # type: ignore[union-attr]  # every scrape reads anew
        for i in range(3):
            t.publish({"type": "mention", "actor": "alice", "recipients": [f"u{i}"]})
        clock.advance(5)
        seen = samples(generate_latest(metrics.scrape_registry).decode())
        assert seen[("tidings_jobs_waiting", (("func", "fanout"),))] == 3
        assert seen[("tidings_queue_up", ())] == 1
        assert 5 <= seen[("tidings_oldest_runnable_job_age_seconds", ())] < 6
        claimed = t.queue.claim(2)
        t.queue.fail(claimed[0], "boom")  # the only attempt: a final failure
        seen = samples(generate_latest(metrics.scrape_registry).decode())
        assert seen[("tidings_jobs_waiting", (("func", "fanout"),))] == 1
        assert seen[("tidings_jobs_running", (("func", "fanout"),))] == 1
        assert seen[("tidings_jobs_failed_final", (("func", "fanout"),))] == 1
        t.run_jobs()
        t.queue.release(claimed[1])
        t.run_jobs()
        seen = samples(generate_latest(metrics.scrape_registry).decode())
        assert seen[("tidings_oldest_runnable_job_age_seconds", ())] == 0
        assert ("tidings_jobs_waiting", (("func", "fanout"),)) not in seen


def test_a_queue_that_does_not_answer_leaves_the_scrape_answering() -> None:
    def away() -> object:
        raise ConnectionError("down")

    metrics = Metrics(queue=away)  # type: ignore[arg-type]
    Observer().observe("x", 1)
    seen = samples(generate_latest(metrics.scrape_registry).decode())
    assert seen[("tidings_queue_up", ())] == 0
    assert seen[("tidings_events_accepted_total", ())] == 0


def test_observations_land_on_their_metrics() -> None:
    metrics = Metrics()
    observer = Observer()
    observer.listeners.append(metrics.observe)
    observer.delivered(3)
    observer.delivery("webhook", "failed")
    observer.delivery("email", "delivered")
    observer.observe("visible_seconds", 0.2)
    from tidings.exceptions import HotStoreEmptied, StoreUnavailable

    observer.store_error(StoreUnavailable("away"))
    observer.store_error(HotStoreEmptied("emptied"))
    observer.store_error(ValueError("not the store's"))
    seen = samples(generate_latest(metrics.registry).decode())
    assert seen[("tidings_notifications_written_total", ())] == 3
    assert seen[("tidings_deliveries_total", (("channel", "web"), ("outcome", "delivered")))] == 3
    assert seen[("tidings_deliveries_total",
                 (("channel", "webhook"), ("outcome", "failed")))] == 1
    assert seen[("tidings_deliveries_total",
                 (("channel", "email"), ("outcome", "delivered")))] == 1
    assert seen[("tidings_publish_to_visible_seconds_count", ())] == 1
    assert seen[("tidings_store_errors_total", (("kind", "unavailable"),))] == 1
    assert seen[("tidings_store_errors_total", (("kind", "hot_store_emptied"),))] == 1


CHILD = textwrap.dedent("""
    import os, sys
    from tidings.metrics import Metrics
    metrics = Metrics()
    metrics.events_accepted.inc(int(sys.argv[1]))
    metrics.open_streams.inc(int(sys.argv[1]))
    if sys.argv[2] == "crash":
        os._exit(0)  # no goodbye: its gauge file stays behind
    from prometheus_client import generate_latest
    sys.stdout.write(generate_latest(metrics.scrape_registry).decode())
""")


def test_processes_sharing_a_directory_sum_and_a_dead_ones_gauges_go(tmp_path: Path) -> None:
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def child(count: int, how: str) -> str:
        done = subprocess.run([sys.executable, "-c", CHILD, str(count), how], env=env,
                              capture_output=True, text=True, timeout=60, check=True)
        return done.stdout

    child(3, "crash")
    seen = samples(child(4, "scrape"))
    assert seen[("tidings_events_accepted_total", ())] == 7  # the crashed one's count kept
    assert seen[("tidings_open_streams", ())] == 4  # its open streams gone with it


def test_the_dashboard_plots_only_metrics_tidings_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {re.sub(r"_(bucket|count|sum|total)$", "", name)
            for expr in exprs for name in re.findall(r"tidings_\w+", expr)}

    with open_tidings("memory://dashboard") as t:
        t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
        metrics = Metrics(queue=t.queue.figures)
        families = {family.name for family in
                    text_string_to_metric_families(generate_latest(metrics.scrape_registry)
                                                   .decode())}
    assert used - families == set()
    needed = {"tidings_jobs_waiting", "tidings_jobs_running", "tidings_jobs_failed_final",
              "tidings_oldest_runnable_job_age_seconds", "tidings_notifications_written",
              "tidings_publish_to_visible_seconds", "tidings_deliveries",
              "tidings_open_streams", "tidings_store_errors"}
    assert needed <= used
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert [name for name in families if f"`{name}" not in operations
            and not name.endswith("_created")] == []


def test_open_streams_are_counted_while_they_are_open(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server()

    def open_streams() -> float:
        with live.http() as server:
            return samples(server.get("/metrics").text)[("tidings_open_streams", ())]

    with live.http(live.token("bob")) as bob, bob.stream("GET", "/v1/me/stream") as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()  # kept: a dropped iterator closes the response
        next(lines)  # its first frame: the stream holds its place
        assert open_streams() == 1
    deadline = time.monotonic() + 10
    while open_streams() != 0:  # the server notices the client went at its next write
        assert time.monotonic() < deadline
        time.sleep(0.1)
