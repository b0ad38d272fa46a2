"""A Redis hot store that hangs (SIGSTOP: connections open, nothing answered) gives 503 within
the documented bound through a real server, ``/readyz`` too, and the routes that never touch
Redis keep answering while clients keep asking for what lives there (the thread pool is not
filled with requests each waiting out the hang). After SIGCONT everything answers again."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends import require
from redis_servers import RedisProcess, _have_redis_server
from servers import SERVER_KEY, start, wait_for
from stores import SqlStores

TIMEOUT = 0.4  # the URL's timeout= for this test
# A command on a hung server fails after one timeout (a timeout is never sent again); a
# request makes a few Redis calls at most, each failing at once once the server is known away.
BOUND = 4 * TIMEOUT + 0.5
AUTH_HEADERS = {"Authorization": f"Bearer {SERVER_KEY}"}
FLOOD = 120  # concurrent requests for Redis data, more than the thread pool's 40 threads


@pytest.fixture
def hung(tmp_path: Path, sqlite_stores: SqlStores) -> Iterator[tuple[str, RedisProcess]]:
    require("redis-server", _have_redis_server)
    server = RedisProcess(tmp_path / "redis").start()
    url = sqlite_stores.clone()
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        stack.callback(lambda: server.process and server.process.send_signal(signal.SIGCONT))
        live = start(stack, url, config={
            "hot_store_url": f"{server.url}?prefix=h:&timeout={TIMEOUT}"})
        yield live.base_url, server
    sqlite_stores.drop(url)


def _timed(http: httpx.Client, path: str) -> tuple[int, float]:
    started = time.monotonic()
    status = http.get(path).status_code
    return status, time.monotonic() - started


async def _flood(base_url: str, stop: asyncio.Event) -> list[int]:
    """Ask for unread counts (in Redis) FLOOD at a time until ``stop``."""
    statuses: list[int] = []
    limits = httpx.Limits(max_connections=FLOOD)
    async with httpx.AsyncClient(base_url=base_url, headers=AUTH_HEADERS, timeout=60,
                                 limits=limits) as client:
        async def one(n: int) -> None:
            while not stop.is_set():
                response = await client.get(f"/v1/users/u{n}/notifications/unread-count")
                statuses.append(response.status_code)
                await asyncio.sleep(0.2)  # a client waits a little before asking again

        await asyncio.gather(*(one(n) for n in range(FLOOD)))
    return statuses


async def _sql_only_while_flooded(base_url: str) -> tuple[list[float], list[int]]:
    """Time reads that touch only SQL (preferences, subscriptions) while the flood runs."""
    stop = asyncio.Event()
    flood = asyncio.create_task(_flood(base_url, stop))
    took: list[float] = []
    async with httpx.AsyncClient(base_url=base_url, headers=AUTH_HEADERS, timeout=60) as client:
        await asyncio.sleep(1.5)  # the flood is on, its first wave has met the hang
        for n in range(10):
            started = asyncio.get_running_loop().time()
            for path in (f"/v1/users/p{n}/preferences", f"/v1/users/p{n}/subscriptions"):
                assert (await client.get(path)).status_code == 200
            took.append(asyncio.get_running_loop().time() - started)
            await asyncio.sleep(0.05)
    stop.set()
    return took, await flood


def test_a_hung_redis_gives_503_within_the_bound_and_starves_nothing(
        hung: tuple[str, RedisProcess]) -> None:
    base_url, server = hung
    assert server.process is not None
    with httpx.Client(base_url=base_url, headers=AUTH_HEADERS, timeout=60) as http:
        assert http.get("/v1/users/u1/notifications/unread-count").status_code == 200
        server.process.send_signal(signal.SIGSTOP)

        for path in ("/v1/users/u1/notifications/unread-count",
                     "/v1/users/u2/notifications?limit=5", "/readyz"):
            status, took = _timed(http, path)
            assert status == 503, path
            assert took < 2 * BOUND, (path, took)  # twice: a busy machine's slack

        took, statuses = asyncio.run(_sql_only_while_flooded(base_url))
        assert set(statuses) == {503}
        # two SQL reads each, not stuck behind the flood (a loaded machine may be slow once)
        assert statistics.median(took) < 1.0 and max(took) < 6.0, took

    server.process.send_signal(signal.SIGCONT)
    # a new client: the server may have closed the old one's idle keep-alive connection
    with httpx.Client(base_url=base_url, headers=AUTH_HEADERS, timeout=60) as http:
        assert wait_for(lambda: http.get("/readyz").status_code == 200, 10)
        assert wait_for(
            lambda: http.get("/v1/users/u1/notifications/unread-count").status_code == 200, 10)
