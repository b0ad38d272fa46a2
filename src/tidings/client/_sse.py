"""Reading ``text/event-stream``: the frame parser both clients share, and the one piece that
differs by I/O model, reading lines until a deadline.

That piece comes in two hand-written flavours, named so that ``scripts/unasync.py`` maps the
one the asynchronous client calls onto the one the synchronous client calls:
:func:`aiter_lines_until` bounds each read with an anyio cancel scope, :func:`iter_lines_until`
cannot cancel a blocked read, so it shuts the socket down at the deadline instead.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
import time
from collections.abc import AsyncGenerator, Generator

import anyio
import httpx

from tidings.client._errors import ApiError
from tidings.client._models import SseEvent
from tidings.client._requests import DEFAULT_TIMEOUT

RECONNECT_SECONDS = 2.0  # the wait before reconnecting when the server said none
MAX_RECONNECT_SECONDS = 60.0  # the longest wait between failing reconnections (jittered)


class SseParser:
    """Turns ``text/event-stream`` lines into :class:`SseEvent` (data JSON-decoded), keeping
    what a reconnection needs: the last event id and the server's ``retry:`` delay."""

    def __init__(self, last_event_id: str | None = None) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id = last_event_id
        self.last_event_id = last_event_id  # what ``Last-Event-ID`` sends on reconnecting
        self.retry: float | None = None  # seconds, as the server's ``retry:`` last said

    def headers(self) -> dict[str, str]:
        """What a new connection to the stream sends (``Last-Event-ID`` once an id came); a
        frame the last connection cut short is dropped."""
        self._event, self._data, self._id = "", [], self.last_event_id
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    def feed(self, line: str) -> SseEvent | None:
        if not line:  # a blank line ends a frame
            event, data = self._event or "message", self._data
            self._event, self._data = "", []
            self.last_event_id = self._id
            if not data:
                return None
            text = "\n".join(data)
            try:
                return SseEvent(event, json.loads(text), self._id)
            except ValueError:
                return SseEvent(event, text, self._id)
        if line.startswith(":"):  # a comment (keepalive)
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value or None
        elif name == "retry" and value.isdigit():
            self.retry = int(value) / 1000
        return None


class Backoff:
    """How long a stream waits before reconnecting: the server's ``retry:`` (or
    :data:`RECONNECT_SECONDS`) after a stream that ran, then, while reconnecting fails,
    up to twice as long each time (capped at :data:`MAX_RECONNECT_SECONDS`), the wait drawn at
    random above the server's delay, so that many clients cut off at once do not come back at
    once; a ``Retry-After`` answer is waited out whole."""

    def __init__(self) -> None:
        self.failures = 0

    def delay(self, retry: float | None, retry_after: float | None = None) -> float:
        base = RECONNECT_SECONDS if retry is None else retry
        if retry_after is not None:
            wait = max(base, retry_after)
        elif self.failures == 0:
            wait = base
        else:
            wait = base + random.uniform(0, min(MAX_RECONNECT_SECONDS, base * 2 ** self.failures))
        self.failures += 1
        return min(wait, max(MAX_RECONNECT_SECONDS, base))

    def reached(self) -> None:
        """The stream is open again: the next wait is the first one."""
        self.failures = 0


def waited_out(error: ApiError, reconnect: bool) -> float | None:
    """The ``Retry-After`` (or None) of a refused stream that is tried again — the server or
    a proxy is busy or away (429, 502, 503, 504) — else raise ``error`` (a bad token, no
    such user…, or ``reconnect`` off)."""
    if not reconnect or error.status not in (429, 502, 503, 504):
        raise error
    return error.retry_after


async def apause(seconds: float, deadline: float | None) -> bool:
    """Sleep ``seconds``, not past ``deadline``; False when the deadline came first."""
    if deadline is not None and time.monotonic() + seconds >= deadline:
        await anyio.sleep(max(deadline - time.monotonic(), 0))
        return False
    await anyio.sleep(seconds)
    return True


def pause(seconds: float, deadline: float | None) -> bool:
    """:func:`apause` for the synchronous client."""
    if deadline is not None and time.monotonic() + seconds >= deadline:
        time.sleep(max(deadline - time.monotonic(), 0))
        return False
    time.sleep(seconds)
    return True


def stream_timeout(timeout: float | None) -> httpx.Timeout:
    """A stream waits up to ``timeout`` (None: for ever) for its next line."""
    return httpx.Timeout(DEFAULT_TIMEOUT, read=timeout)


async def aiter_lines_until(response: httpx.Response,
                            deadline: float | None) -> AsyncGenerator[str, None]:
    """The response's lines until it ends or ``time.monotonic()`` reaches ``deadline``."""
    lines = response.aiter_lines()
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return
        with anyio.move_on_after(remaining) as scope:
            try:
                line = await anext(lines)
            except StopAsyncIteration:
                return
        if scope.cancelled_caught:
            return
        yield line


def iter_lines_until(response: httpx.Response,
                     deadline: float | None) -> Generator[str, None, None]:
    """The response's lines until it ends or ``time.monotonic()`` reaches ``deadline``."""
    timer = None if deadline is None else shut_at_deadline(response, deadline - time.monotonic())
    try:
        for line in response.iter_lines():
            if deadline is not None and time.monotonic() >= deadline:
                return
            yield line
    except httpx.TransportError:
        # the read that the shutdown ended; any other failure is the caller's to see
        if deadline is None or time.monotonic() < deadline:
            raise
    finally:
        if timer is not None:
            timer.cancel()


def shut_at_deadline(response: httpx.Response, seconds: float) -> threading.Timer | None:
    """Shut the stream's socket down after ``seconds``, which ends a read blocked on it."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if not isinstance(sock, socket.socket):
        return None  # a transport without a socket: the read timeout alone bounds the wait

    def shut() -> None:
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(seconds, shut)
    timer.daemon = True
    timer.start()
    return timer
