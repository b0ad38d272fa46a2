"""One injectable clock: every time tidings stores is integer microseconds since the epoch (UTC)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now_us(self) -> int: ...


class SystemClock:
    """Wall-clock time, strictly increasing within the process so ties are rare."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def now_us(self) -> int:
        with self._lock:
            now = time.time_ns() // 1000
            if now <= self._last:
                now = self._last + 1
            self._last = now
            return now


class FrozenClock:
    """A clock tests move by hand."""

    def __init__(self, start_us: int = 1_700_000_000_000_000) -> None:
        self._now = start_us
        self._lock = threading.Lock()

    def now_us(self) -> int:
        with self._lock:
            self._now += 1
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += int(seconds * 1_000_000)


def to_datetime(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1_000_000, tz=UTC)


def to_rfc3339(us: int) -> str:
    return to_datetime(us).isoformat().replace("+00:00", "Z")


def from_datetime(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1_000_000)


def parse_rfc3339(text: str) -> int:
    """Parse an RFC 3339 timestamp into microseconds; raises ValueError when malformed."""
    return from_datetime(datetime.fromisoformat(text.replace("Z", "+00:00")))
