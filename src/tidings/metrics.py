"""Prometheus metrics across each notification's life, from every process.

The engine reports what it does to its listeners (:mod:`tidings.observe`); :class:`Metrics`
turns that into counters and histograms. The API serves them at ``/metrics``, ``tidings worker
--metrics-port`` on a port of its own, and the queue's figures are read from the queue at each
scrape (:class:`QueueCollector`), so any process answers them for all.

Several processes behind one port (``tidings serve --workers N``) share their figures through
prometheus-client's multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR`` (set by ``tidings serve``
before the processes start) holds each process's values in files, and a scrape of any of them
sums them all (:func:`scrape_registry`). A process that ended keeps its counts; its gauges go
(:func:`forget_dead`). ``docs/operations.md`` lists the metrics.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tidings.exporter import MULTIPROC_DIR
from tidings.ports.jobs import QueueFigures

log = logging.getLogger("tidings.metrics")


SECOND = 1_000_000
CHANNELS = ("web", "email", "webhook")  # deliveries are counted per channel from the start
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


def multiprocess_dir() -> str | None:
    """The directory the processes of this server share their values in, if any."""
    return os.environ.get(MULTIPROC_DIR) or None


class Metrics:
    """The metrics of one app or worker: a registry of its own, so several apps in one process
    (tests) never clash."""

    def __init__(self, queue: Callable[[], QueueFigures] | None = None) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.events_accepted = Counter(
            "tidings_events_accepted", "Events accepted by POST /v1/events", registry=r)
        self.notifications_written = Counter(
            "tidings_notifications_written", "Inbox rows written by fan-out (rate: rows/s)",
            registry=r)
        self.fanout_seconds = Histogram(
            "tidings_fanout_duration_seconds", "Time a fan-out job (or chunk) took",
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
        self.visible_seconds = Histogram(
            "tidings_publish_to_visible_seconds",
            "From an event's publication to its inbox rows' commit", registry=r,
            buckets=LATENCY_BUCKETS)
        self.emails_sent = Counter(
            "tidings_emails_sent", "Mails handed to the SMTP server", registry=r)
        self.deliveries = Counter(
            "tidings_deliveries", "Deliveries per channel, by outcome (delivered, failed)",
            ["channel", "outcome"], registry=r)
        self.marked_read = Counter(
            "tidings_notifications_read", "Display groups marked read", registry=r)
        self.marked_seen = Counter(
            "tidings_seen_marks", "Seen watermarks moved", registry=r)
        self.jobs = Counter(
            "tidings_jobs", "Jobs by outcome (queued, completed, retried, failed)",
            ["outcome"], registry=r)
        self.store_errors = Counter(
            "tidings_store_errors", "Store errors met, by kind", ["kind"], registry=r)
        self.open_streams = Gauge(
            "tidings_open_streams", "Live streams (SSE) held open", registry=r,
            multiprocess_mode="livesum")
        self.requests = Histogram(
            "tidings_http_request_duration_seconds", "HTTP request latency",
            ["method", "route", "status"], registry=r,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28))
        for channel in CHANNELS:
            for outcome in ("delivered", "failed"):
                self.deliveries.labels(channel, outcome)
        self.queue = QueueCollector(queue) if queue is not None else None
        if self.queue is not None:
            r.register(self.queue)
        self.scrape_registry = scrape_registry(self.registry, self.queue)

    def observe(self, name: str, value: float) -> None:
        """Count what the engine reports (its ``listeners`` hook). Labelled observations name
        their labels after colons: ``delivery:email:failed``, ``store_error:unavailable``."""
        if name == "delivered":
            self.notifications_written.inc(value)
            self.deliveries.labels("web", "delivered").inc(value)
        elif name == "visible_seconds":
            self.visible_seconds.observe(value)
        elif name == "fanout_seconds":
            self.fanout_seconds.observe(value)
        elif name == "emails_sent":
            self.emails_sent.inc(value)
        elif name.startswith("delivery:"):
            _, channel, outcome = name.split(":", 2)
            self.deliveries.labels(channel, outcome).inc(value)
        elif name.startswith("store_error:"):
            self.store_errors.labels(name.partition(":")[2]).inc(value)
        elif name.startswith("job_"):
            self.jobs.labels(name[4:]).inc(value)


def scrape_registry(own: CollectorRegistry, queue: QueueCollector | None) -> CollectorRegistry:
    """What a scrape reads: this process's registry, or, in multiprocess mode, every process's
    values summed from the shared directory (and the queue's figures, read once)."""
    directory = multiprocess_dir()
    if directory is None:
        return own
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    registry.register(ForgetDead(directory))  # first: the files it drops are not read
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    if queue is not None:
        registry.register(queue)
    return registry


class QueueCollector(Collector):
    """The job queue's figures, read from the queue when scraped (a few aggregate statements,
    at most once a second however many scrapers ask)."""

    def __init__(self, figures: Callable[[], QueueFigures], max_age: float = 1.0) -> None:
        self.figures = figures
        self.max_age = max_age
        self._last: tuple[float, QueueFigures] | None = None
        self._lock = threading.Lock()

    def _read(self) -> QueueFigures | None:
        with self._lock:
            if self._last is not None and time.monotonic() - self._last[0] < self.max_age:
                return self._last[1]
            try:
                figures = self.figures()
            except Exception as exc:  # a scrape still answers what this process knows
                log.warning("could not read the queue's figures: %s", exc)
                return None
            self._last = (time.monotonic(), figures)
            return figures

    def collect(self) -> Iterator[Metric]:
        figures = self._read()
        up = GaugeMetricFamily("tidings_queue_up", "Whether the queue answered this scrape")
        up.add_metric([], 0 if figures is None else 1)
        yield up
        if figures is None:
            return
        for name, help_text, counts in (
                ("tidings_jobs_waiting", "Jobs waiting in the queue (not claimed), per function",
                 figures.waiting),
                ("tidings_jobs_running", "Jobs claimed by a worker now, per function",
                 figures.running),
                ("tidings_jobs_failed_final", "Jobs given up after their last attempt, on "
                 "record, per function", figures.failed)):
            family = GaugeMetricFamily(name, help_text, labels=["func"])
            for func, count in sorted(counts.items()):
                family.add_metric([func], count)
            yield family
        oldest = figures.oldest_runnable
        age = GaugeMetricFamily("tidings_oldest_runnable_job_age_seconds",
                                "How long the oldest runnable job has waited (0: none waits)")
        age.add_metric([], max(figures.now - oldest, 0) / SECOND if oldest is not None else 0)
        yield age


class ForgetDead(Collector):
    """Before each multiprocess scrape, drop the live gauges of processes that ended without
    saying so (a crashed server process uvicorn replaced): their counters stay, summed."""

    PID = re.compile(r"^gauge_live\w*?_(\d+)\.db$")

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)

    def collect(self) -> Iterator[Metric]:
        from prometheus_client import multiprocess

        for path in self.directory.glob("gauge_live*.db"):
            found = self.PID.match(path.name)
            if found and not _alive(int(found.group(1))):
                multiprocess.mark_process_dead(  # type: ignore[no-untyped-call]
                    int(found.group(1)), str(self.directory))
        return iter(())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_ended() -> None:
    """Tell the shared directory this process has ended (its live gauges go)."""
    directory = multiprocess_dir()
    if directory is None:
        return
    from prometheus_client import multiprocess

    with contextlib.suppress(OSError):
        multiprocess.mark_process_dead(os.getpid(), directory)  # type: ignore[no-untyped-call]


def serve_metrics(tidings: Any, host: str, port: int) -> Any:
    """Count what ``tidings`` (a :class:`tidings.engine.Tidings`) reports and serve it, with
    the queue's figures, at ``http://host:port/metrics`` from a thread; returns the server
    (``shutdown()`` stops it). Raises :class:`OSError` if the port cannot be had."""
    from prometheus_client import start_http_server

    metrics = Metrics(queue=tidings.queue.figures)
    tidings.listeners.append(metrics.observe)
    server, _thread = start_http_server(port, addr=host, registry=metrics.scrape_registry)
    logging.getLogger("tidings.worker").info("metrics at http://%s:%d/metrics", host, port)
    return server
