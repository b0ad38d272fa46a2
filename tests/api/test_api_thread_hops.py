"""A request's blocking work is the engine call it makes, run in the thread pool once: the
dependencies every route declares (state, caller, user, the query check) run on the event
loop, not each in a thread of its own. Counted, not timed."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio.to_thread
import httpx
import pytest

from servers import SERVER_KEY
from tidings.api.app import create_app
from tidings.engine import Tidings


def _hops(t: Tidings, monkeypatch: pytest.MonkeyPatch, paths: list[str]) -> list[int]:
    app = create_app(t, api_keys=(SERVER_KEY,), token_secret=None)
    run_sync = anyio.to_thread.run_sync
    hops = [0]

    async def counted(*args: Any, **kwargs: Any) -> Any:
        hops[0] += 1
        return await run_sync(*args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)

    async def requests() -> list[int]:
        per_request = []
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {SERVER_KEY}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for path in paths:
                hops[0] = 0
                response = await client.get(path, headers=headers)
                assert response.status_code == 200, response.text
                per_request.append(hops[0])
        return per_request

    return asyncio.run(requests())


def test_an_unread_count_and_a_page_take_one_thread_hop_each(
        t: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    t.run_jobs()
    t.set_preferences("bob", {"locale": "en"})
    page = "/v1/users/bob/notifications?limit=20"
    hops = _hops(t, monkeypatch, ["/v1/users/bob/notifications/unread-count", page, page])
    # the count and the page: none on PostgreSQL, awaited on the event loop
    # (store/sql/onloop.py); the page's first time also reads the user's locale, then cached
    loop = t.store.backend == "postgresql"
    assert hops == ([0, 1, 0] if loop else [1, 2, 1])


def test_an_empty_first_page_takes_the_same_hops_as_a_full_one(
        t: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty page is the watermarks' row alone: on PostgreSQL it is read on the event loop
    like any first page (the first request reads the user's locale in a thread)."""
    t.set_preferences("bob", {"locale": "en"})
    hops = _hops(t, monkeypatch, ["/v1/users/bob/notifications", "/v1/users/bob/notifications"])
    assert hops == ([1, 0] if t.store.backend == "postgresql" else [2, 1])
