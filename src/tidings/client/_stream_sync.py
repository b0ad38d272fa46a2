# Generated from _stream_async.py by scripts/unasync.py: do not edit by hand.
# Edit _stream_async.py, then run scripts/unasync.py (CI runs it with --check).
"""The live stream of :class:`~tidings.client.Client`: Server-Sent Events that reconnect
and resume (written once: see ``scripts/unasync.py``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import httpx

from tidings.client._errors import error_of
from tidings.client._models import SseEvent
from tidings.client._requests import query, user_path
from tidings.client._sse import (
    Backoff,
    SseParser,
    iter_lines_until,
    pause,
    stream_timeout,
    waited_out,
)


class Stream:
    """``stream()``, a base of the client: it needs only the client's HTTP connection."""

    _http: httpx.Client

    def stream(
        self, *, user: str | None = None, locale: str | None = None,
        timeout: float | None = None, reconnect: bool = True,
        last_event_id: str | None = None,
    ) -> Iterator[SseEvent]:
        """The live stream as :class:`SseEvent` ``(event, data)`` pairs, each with its ``id``:
        ``unread``, ``notification``, ``timeline`` (a :class:`TimelineEvent`) and ``resync``
        (more was missed than the server replays: read the lists named again). With
        ``timeout``, iteration ends after that many seconds. A connection that ends or breaks
        (or a busy server: 429, 502-504) is opened again after the server's ``retry:``, later
        with jitter while it fails, resuming with ``Last-Event-ID`` (``last_event_id``: an
        ``id`` kept from before); ``reconnect=False`` ends instead (docs/client.md).

        Leaving it early, close it (``contextlib.closing``) so the connection is let go at once.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        path = user_path(user, "/stream")
        parser = SseParser(last_event_id)
        backoff = Backoff()
        while True:
            retry_after = None
            try:
                with self._http.stream("GET", path, params=query(locale=locale),
                                             headers=parser.headers(),
                                             timeout=stream_timeout(timeout)) as response:
                    if not response.is_success:
                        response.read()
                        retry_after = waited_out(error_of(response), reconnect)
                    else:
                        backoff.reached()
                        with contextlib.closing(
                                iter_lines_until(response, deadline)) as lines:
                            for line in lines:
                                frame = parser.feed(line)
                                if frame is not None:
                                    yield frame
            except httpx.TransportError:
                if not reconnect:
                    raise
            if not reconnect or not pause(backoff.delay(parser.retry, retry_after),
                                                 deadline):
                return
