"""Statistics for benchmark figures: medians over rounds and latency percentiles."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Latencies:
    """Per-request latencies in seconds, summarised as milliseconds."""

    samples: tuple[float, ...]

    @property
    def p50_ms(self) -> float:
        return percentile(self.samples, 50) * 1000

    @property
    def p90_ms(self) -> float:
        return percentile(self.samples, 90) * 1000

    @property
    def p99_ms(self) -> float:
        return percentile(self.samples, 99) * 1000

    def to_dict(self) -> dict[str, Any]:
        return {"count": len(self.samples), "p50_ms": round(self.p50_ms, 4),
                "p90_ms": round(self.p90_ms, 4), "p99_ms": round(self.p99_ms, 4)}


@dataclass(frozen=True)
class Timed:
    """One timed phase of sequential requests: its wall time and each request's latency."""

    seconds: float
    latencies: tuple[float, ...]

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds > 0 else math.nan


def time_each(calls: Sequence[Callable[[], object]]) -> Timed:
    """Run ``calls`` one after another, timing each and the whole phase."""
    latencies: list[float] = []
    clock = time.perf_counter
    started = clock()
    for call in calls:
        before = clock()
        call()
        latencies.append(clock() - before)
    return Timed(clock() - started, tuple(latencies))
