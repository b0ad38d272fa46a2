"""Observations (delivered notifications, job outcomes, timings) for whoever listens.

The HTTP API turns them into Prometheus metrics; tests read the counters.
"""

from __future__ import annotations

from collections.abc import Callable

from tidings.domain.views import Counters

Listener = Callable[[str, float], None]


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
