"""Server-Sent Events: the unread count and new items of one user, live.

Every stream polls the store (one capped count and one newest-base-row query every
``interval`` seconds), so it works the same whether the worker runs in this process or on
another machine, on every backend. A mark-read on one device changes the count every other
device's stream sees on its next poll.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool

from tidings.api.jsonshape import dumps
from tidings.engine import Tidings

KEEPALIVE_SECONDS = 15.0


def sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {dumps(data).decode()}\n\n"


async def user_stream(tidings: Tidings, user: str, *, locale: str | None,
                      disconnected: Callable[[], Any], interval: float = 0.5,
                      ) -> AsyncIterator[str]:
    """Yield SSE frames: ``unread`` when the count changes, ``notification`` for new items."""
    last_count: tuple[int, str] | None = None
    newest: str | None = None
    idle = 0.0
    first = True
    yield "retry: 2000\n\n"
    while not await disconnected():
        try:
            count = await run_in_threadpool(tidings.unread_count, user)
            page = await run_in_threadpool(
                lambda: tidings.notifications(user, limit=10, locale=locale))
        except Exception:  # a store outage: keep the stream, try again later
            await asyncio.sleep(max(interval, 1.0))
            continue
        frames = []
        top = page.items[0].id if page.items else None
        if not first and top is not None and top != newest:
            fresh = []
            for item in page.items:
                if item.id == newest:
                    break
                fresh.append(item)
            frames += [sse("notification", item.to_dict()) for item in reversed(fresh)]
        newest = top if top is not None else newest
        current = (count.count, count.display)
        if current != last_count:
            frames.append(sse("unread", {"count": count.count, "display": count.display}))
            last_count = current
        first = False
        if frames:
            idle = 0.0
            for frame in frames:
                yield frame
        else:
            idle += interval
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield ": keepalive\n\n"
        await asyncio.sleep(interval)
