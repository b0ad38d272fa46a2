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
import socket
import threading
import time
from collections.abc import AsyncGenerator, Generator

import anyio
import httpx

from tidings.client._models import SseEvent
from tidings.client._requests import DEFAULT_TIMEOUT


class SseParser:
    """Turns ``text/event-stream`` lines into ``(event, data)`` pairs (data JSON-decoded)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> SseEvent | None:
        if not line:  # a blank line ends a frame
            event, data = self._event or "message", self._data
            self._event, self._data = "", []
            if not data:
                return None
            text = "\n".join(data)
            try:
                return event, json.loads(text)
            except ValueError:
                return event, text
        if line.startswith(":"):  # a comment (keepalive)
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


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
