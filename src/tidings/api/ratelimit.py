"""A token bucket per server key for publishing (429 with Retry-After when empty)."""

from __future__ import annotations

import math
import threading
import time


class RateLimiter:
    def __init__(self, per_second: float, burst: float | None = None) -> None:
        self.rate = per_second
        self.capacity = burst if burst is not None else per_second * 2
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

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
                return 0.0
            self._buckets[key] = (tokens, now)
            return max((cost - tokens) / self.rate, 0.001)

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
