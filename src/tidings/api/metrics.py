"""Prometheus metrics across each notification's life."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class Metrics:
    """One registry per app, so several apps (tests) never clash."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.events_accepted = Counter(
            "tidings_events_accepted", "Events accepted by POST /v1/events",
            registry=self.registry)
        self.notifications_written = Counter(
            "tidings_notifications_written", "Inbox rows written by fan-out",
            registry=self.registry)
        self.fanout_seconds = Histogram(
            "tidings_fanout_duration_seconds", "Time a fan-out job (or chunk) took",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
        self.emails_sent = Counter(
            "tidings_emails_sent", "Mails handed to the SMTP server", registry=self.registry)
        self.marked_read = Counter(
            "tidings_notifications_read", "Display groups marked read", registry=self.registry)
        self.marked_seen = Counter(
            "tidings_seen_marks", "Seen watermarks moved", registry=self.registry)
        self.jobs = Counter(
            "tidings_jobs", "Jobs by outcome (queued, completed, retried, failed)",
            ["outcome"], registry=self.registry)
        self.requests = Histogram(
            "tidings_http_request_duration_seconds", "HTTP request latency",
            ["method", "route", "status"], registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28))

    def observe(self, name: str, value: float) -> None:
        """Count what the engine reports (its ``listeners`` hook)."""
        if name == "delivered":
            self.notifications_written.inc(value)
        elif name == "fanout_seconds":
            self.fanout_seconds.observe(value)
        elif name == "emails_sent":
            self.emails_sent.inc(value)
        elif name.startswith("job_"):
            self.jobs.labels(name[4:]).inc(value)
