"""The live stream of :class:`~tidings.client.AsyncClient`: Server-Sent Events that reconnect
and resume (written once: see ``scripts/unasync.py``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import httpx

from tidings.client._errors import error_of
from tidings.client._models import SseEvent
from tidings.client._requests import query, user_path
from tidings.client._sse import (
    Backoff,
    SseParser,
    aiter_lines_until,
    apause,
    stream_timeout,
    waited_out,
)


class AsyncStream:
    """``stream()``, a base of the client: it needs only the client's HTTP connection."""

    _http: httpx.AsyncClient

    async def stream(
        self, *, user: str | None = None, locale: str | None = None,
        timeout: float | None = None, reconnect: bool = True,
        last_event_id: str | None = None,
    ) -> AsyncIterator[SseEvent]:
        """The live stream as :class:`SseEvent` ``(event, data)`` pairs, each with its ``id``:
        ``unread``, ``notification``, ``timeline`` (a :class:`TimelineEvent`) and ``resync``
        (more was missed than the server replays: read the lists named again). With
        ``timeout``, iteration ends after that many seconds. A connection that ends or breaks
        (or a busy server: 429, 502-504) is opened again after the server's ``retry:``, later
        with jitter while it fails, resuming with ``Last-Event-ID`` (``last_event_id``: an
        ``id`` kept from before); ``reconnect=False`` ends instead (docs/client.md).

        Leaving it early, close it (``contextlib.aclosing``) so the connection is let go at once.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        path = user_path(user, "/stream")
        parser = SseParser(last_event_id)
        backoff = Backoff()
        while True:
            retry_after = None
            try:
                async with self._http.stream("GET", path, params=query(locale=locale),
                                             headers=parser.headers(),
                                             timeout=stream_timeout(timeout)) as response:
                    if not response.is_success:
                        await response.aread()
                        retry_after = waited_out(error_of(response), reconnect)
                    else:
                        backoff.reached()
                        async with contextlib.aclosing(
                                aiter_lines_until(response, deadline)) as lines:
                            async for line in lines:
                                frame = parser.feed(line)
                                if frame is not None:
                                    yield frame
            except httpx.TransportError:
                if not reconnect:
                    raise
            if not reconnect or not await apause(backoff.delay(parser.retry, retry_after),
                                                 deadline):
                return
