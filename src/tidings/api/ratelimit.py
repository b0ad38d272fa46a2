"""Token buckets: one per server key for publishing (``TIDINGS_RATE_LIMIT`` events a second),
one per user for requests made with a user token (``TIDINGS_USER_RATE_LIMIT``).

A server key's bucket is one budget for every API process on every machine: it is a row in the
database (:class:`SharedRateLimiter`, ``Store.take_tokens``), taken from in one statement. A
user's bucket is kept in each process (:class:`RateLimiter`): it guards a process against one
user's flood, and sharing it would cost a round trip on every read a browser makes.

An empty bucket is 429 with ``Retry-After``, when the request will fit. A request that costs
more than a full bucket holds (a batch over the burst) never fits: waiting would not help, so
it is 413 naming the limit, with no ``Retry-After``.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time

from starlette.concurrency import run_in_threadpool

from tidings.api.errors import ApiError
from tidings.ports import Store

MAX_KEYS = 100_000  # buckets kept before the full ones (idle long enough) are dropped


class RateLimiter:
    """Buckets of ``burst`` tokens (default: two seconds' worth, at least one) refilled at
    ``per_second``; a rate of 0 turns the limit off."""

    def __init__(self, per_second: float, burst: float | None = None) -> None:
        self.rate = per_second
        self.capacity = max(burst if burst is not None else per_second * 2, 1.0)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def fits(self, cost: float) -> bool:
        """Whether a request of ``cost`` can ever pass (a full bucket holds it)."""
        return self.rate <= 0 or cost <= self.capacity

    def take(self, key: str, cost: float = 1.0) -> float:
        """Take ``cost`` tokens; return 0 if allowed, else seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= cost:
                self._buckets[key] = (tokens - cost, now)
                self._forget_full(now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return max((cost - tokens) / self.rate, 0.001)

    def _forget_full(self, now: float) -> None:
        """Keep the buckets of many users bounded: a bucket refilled to the brim is the same
        as none."""
        if len(self._buckets) <= MAX_KEYS:
            return
        self._buckets = {key: (tokens, last) for key, (tokens, last) in self._buckets.items()
                         if tokens + (now - last) * self.rate < self.capacity}

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))


class SharedRateLimiter(RateLimiter):
    """Buckets kept in the store, so every process that uses it spends from the same one.
    Keys are stored as a hash (a server key is a secret)."""

    def __init__(self, store: Store, per_second: float, burst: float | None = None) -> None:
        super().__init__(per_second, burst)
        self.store = store

    def take(self, key: str, cost: float = 1.0) -> float:
        if self.rate <= 0:
            return 0.0
        bucket = hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]
        return self.store.take_tokens(bucket, cost, rate=self.rate, capacity=self.capacity)


async def admit_shared(limiter: SharedRateLimiter, key: str, cost: float, *, what: str,
                       setting: str) -> None:
    """:func:`admit` for a shared bucket: its round trip to the store in a thread."""
    _refuse_oversize(limiter, cost, what=what, setting=setting)
    wait = await run_in_threadpool(limiter.take, key, cost) if limiter.rate > 0 else 0.0
    _refuse_empty(limiter, wait, what=what, setting=setting)


def admit(limiter: RateLimiter, key: str, cost: float, *, what: str, setting: str) -> None:
    """Take ``cost`` from ``key``'s bucket, or raise: 413 when it can never fit, 429 with
    ``Retry-After`` when the bucket is empty now. ``what`` names the unit counted
    ("events", "requests"), ``setting`` the variable that sets the rate."""
    _refuse_oversize(limiter, cost, what=what, setting=setting)
    _refuse_empty(limiter, limiter.take(key, cost), what=what, setting=setting)


def _refuse_oversize(limiter: RateLimiter, cost: float, *, what: str, setting: str) -> None:
    if not limiter.fits(cost):
        most = math.floor(limiter.capacity)
        raise ApiError(413, f"this request counts {cost:g} {what}, more than the rate limit "
                            f"lets through at once ({most}: twice {setting}); send at most "
                            f"{most} per request", code="payload_too_large")


def _refuse_empty(limiter: RateLimiter, wait: float, *, what: str, setting: str) -> None:
    if wait:
        raise ApiError(429, f"too many {what}; slow down (at most {limiter.rate:g} a second, "
                            f"{setting})",
                       headers={"Retry-After": RateLimiter.retry_after(wait)})
