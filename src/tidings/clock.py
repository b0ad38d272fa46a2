"""One injectable clock: every time tidings stores is integer microseconds since the epoch (UTC)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from functools import lru_cache
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


# seconds since the epoch below which a float of microseconds / 10**6 keeps every microsecond
# (its spacing there is under half a microsecond), so the two forms below agree
_EXACT_SECONDS = 2**31


@lru_cache(maxsize=4096)
def _second(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()[:19]


def to_rfc3339(us: int) -> str:
    """``2026-11-24T09:30:00.123456Z`` (no fraction when it is zero), as ``datetime``'s
    ``isoformat`` writes it; within a second only the fraction is written anew (the inbox
    writes a date per item)."""
    seconds, fraction = divmod(us, 1_000_000)
    if not 0 <= seconds < _EXACT_SECONDS:
        return to_datetime(us).isoformat().replace("+00:00", "Z")
    return f"{_second(seconds)}.{fraction:06d}Z" if fraction else _second(seconds) + "Z"


def from_datetime(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1_000_000)


def parse_rfc3339(text: str) -> int:
    """Parse an RFC 3339 timestamp into microseconds; raises ValueError when malformed."""
    return from_datetime(datetime.fromisoformat(text.replace("Z", "+00:00")))
