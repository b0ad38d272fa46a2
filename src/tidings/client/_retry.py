"""When the client asks again: a 429 (rate limited) or 503 (the store cannot serve now) to a
request that is safe to repeat is retried after the answer's ``Retry-After``, a bounded number
of times and never after waiting longer than a cap. Shared by both clients; each sleeps its own
way (:func:`asleep`, :func:`sleep`)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import anyio
import httpx

RETRIED_STATUSES = frozenset({429, 503})
# methods that mean the same when repeated; a POST is safe too when it carries an idempotency
# key (the server answers a repeat with the first answer)
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@dataclass(frozen=True)
class Retry:
    """How a client retries 429 and 503 answers.

    ``attempts`` is the most requests made in all (1: never retry); ``max_wait`` the longest
    wait, in seconds, before one retry: an answer that asks for longer is given to the caller
    at once (as :class:`~tidings.client.ApiError`, its ``retry_after`` set). Without a
    ``Retry-After`` header, the wait is random between 0 and ``backoff`` · 2^(retry - 1)
    ("full jitter"), capped likewise.
    """

    attempts: int = 3
    max_wait: float = 10.0
    backoff: float = 0.5

    def wait(self, method: str, body: Any, response: httpx.Response, attempt: int
             ) -> float | None:
        """Seconds to wait before asking again after ``response`` to the ``attempt``-th
        request, or None to give the answer to the caller."""
        if response.status_code not in RETRIED_STATUSES or attempt >= self.attempts:
            return None
        if not idempotent(method, body):
            return None
        asked = retry_after(response)
        if asked is None:
            jittered: float = random.random() * self.backoff * 2 ** (attempt - 1)
            return min(jittered, self.max_wait)
        return asked if asked <= self.max_wait else None


NO_RETRY = Retry(attempts=1)


def idempotent(method: str, body: Any) -> bool:
    """Whether a request may be sent again without doing its work twice."""
    if method.upper() in IDEMPOTENT_METHODS:
        return True
    return isinstance(body, dict) and bool(body.get("idempotency_key"))


def retry_after(response: httpx.Response) -> float | None:
    """The seconds of the answer's ``Retry-After`` (a number or an HTTP date), or None."""
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


async def asleep(seconds: float) -> None:
    await anyio.sleep(seconds)


def sleep(seconds: float) -> None:
    time.sleep(seconds)
