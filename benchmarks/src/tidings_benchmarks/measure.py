"""Statistics for benchmark figures: medians over rounds and latency percentiles."""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")
BLOCK = 20  # requests a side makes before the other takes its turn (alternating)


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


def turns(n: int, sides: int) -> list[int]:
    """The order of ``sides`` sides in their ``n``-th turn: rotated by one each turn, so each
    side goes first (and last) as often as any other."""
    order = list(range(sides))
    return order[n % sides:] + order[:n % sides] if sides else order


def alternating(items: Sequence[T], sides: Sequence[Callable[[T], object]],
                after: Callable[[int, list[T]], None] | None = None, block: int = BLOCK
                ) -> list[Timed]:
    """Each side's calls for ``items``, in blocks of :data:`BLOCK` items taken in turn, the
    sides' order rotating block by block (:func:`turns`): the sides meet the same load on a
    busy machine and the same caches (a side timed whole right after the other would find the
    database's pages warmed by it, or the box busier or quieter). ``after(side, block)`` runs
    untimed after each side's block."""
    seconds = [0.0] * len(sides)
    latencies: list[list[float]] = [[] for _ in sides]
    for n, start in enumerate(range(0, len(items), block)):
        turn = list(items[start:start + block])
        for i in turns(n, len(sides)):
            timed = time_each([partial(sides[i], item) for item in turn])
            seconds[i] += timed.seconds
            latencies[i] += timed.latencies
            if after is not None:
                after(i, turn)
    return [Timed(s, tuple(lat)) for s, lat in zip(seconds, latencies, strict=True)]


@contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects alive now (a bench's generated data set: hundreds of thousands of
    messages, follows, bodies) left out of the garbage collector's full passes until the
    block ends (``gc.freeze``). A full pass walks every tracked object, so with the data set
    in the heap each one paused whichever side of a figure allocated enough to trigger it —
    tidings' side more often, as it builds more objects — by tens of milliseconds, which a
    deployment's worker, holding no such data set, never pays."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
