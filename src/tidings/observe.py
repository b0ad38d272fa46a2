"""Observations (delivered notifications, job outcomes, timings) for whoever listens.

The HTTP API and ``tidings worker --metrics-port`` turn them into Prometheus metrics
(:mod:`tidings.metrics`); tests read the counters.
"""

from __future__ import annotations

from collections.abc import Callable

from tidings.domain.views import Counters
from tidings.exceptions import (
    HotStoreEmptied,
    SchemaOutOfDate,
    StoreConflict,
    StoreRejected,
    StoreUnavailable,
)

Listener = Callable[[str, float], None]

# the kinds of store error operators count, most specific first
STORE_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (HotStoreEmptied, "hot_store_emptied"), (StoreUnavailable, "unavailable"),
    (StoreRejected, "rejected"), (StoreConflict, "conflict"),
    (SchemaOutOfDate, "schema_out_of_date"))


def store_error_kind(exc: BaseException) -> str | None:
    """The kind of store error ``exc`` is, or None if it is not one."""
    for error, kind in STORE_ERRORS:
        if isinstance(exc, error):
            return kind
    return None


class Observer:
    """Counts what this process did and tells listeners of each observation."""

    def __init__(self) -> None:
        self.counters = Counters()
        self.listeners: list[Listener] = []

    def observe(self, name: str, value: float) -> None:
        for listener in self.listeners:
            listener(name, value)

    def delivered(self, count: int) -> None:
        self.counters.delivered += count
        self.observe("delivered", count)

    def job(self, outcome: str) -> None:
        self.counters.jobs[outcome] = self.counters.jobs.get(outcome, 0) + 1
        self.observe(f"job_{outcome}", 1)

    def store_error(self, exc: BaseException) -> None:
        """Count ``exc`` by its kind if it is a store error (``store_error:<kind>``)."""
        kind = store_error_kind(exc)
        if kind is not None:
            self.observe(f"store_error:{kind}", 1)

    def delivery(self, channel: str, outcome: str, count: int = 1) -> None:
        """A delivery over ``channel`` (email, webhook) ``delivered`` or ``failed``."""
        self.observe(f"delivery:{channel}:{outcome}", count)
