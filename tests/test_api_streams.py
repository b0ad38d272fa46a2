"""Live streams are bounded: a user holds at most 5 open streams (a sixth closes the oldest),
a process at most ``max_streams`` (200 by default; beyond it 503 with ``Retry-After``), and a
closed stream gives its place back. Through a real server, with real SSE connections."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import pytest

from servers import LiveServer

pytest_plugins = ["servers"]

ONE_BACKEND = pytest.mark.parametrize("api_backend", ["sqlite"])
PER_USER = 5


class Stream:
    """One open SSE connection, read in the background until the server ends it."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.first = asyncio.get_running_loop().create_future()
        self.ended = asyncio.Event()
        self.lines: list[str] = []
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for line in self.response.aiter_lines():
                self.lines.append(line)
                if line.startswith("event: unread") and not self.first.done():
                    self.first.set_result(line)
        except (httpx.HTTPError, RuntimeError):  # closed by the test
            pass
        finally:
            self.ended.set()


@asynccontextmanager
async def streams(base_url: str, token: Callable[[str], str]) -> AsyncIterator[
        Callable[[str], object]]:
    """``await open_stream(user)``: a :class:`Stream` once its first frame came, or the
    refusal (an ``httpx.Response``); all are closed at the end."""
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx.AsyncClient(
            base_url=base_url, timeout=httpx.Timeout(10.0, read=None)))

        async def open_stream(user: str) -> Stream | httpx.Response:
            request = http.build_request("GET", "/v1/me/stream", headers={
                "Authorization": f"Bearer {token(user)}"})
            response = await http.send(request, stream=True)
            stack.push_async_callback(response.aclose)
            if response.status_code != 200:
                await response.aread()
                return response
            stream = Stream(response)
            await asyncio.wait_for(stream.first, 5)
            return stream

        yield open_stream


@ONE_BACKEND
def test_a_users_sixth_stream_closes_the_oldest(live: LiveServer) -> None:
    async def scenario() -> None:
        async with streams(live.base_url, live.token) as open_stream:
            mine = [await open_stream("bob") for _ in range(PER_USER)]
            others = await open_stream("carol")
            assert all(isinstance(s, Stream) for s in [*mine, others])
            sixth = await open_stream("bob")
            assert isinstance(sixth, Stream)
            oldest = mine[0]
            assert isinstance(oldest, Stream)
            await asyncio.wait_for(oldest.ended.wait(), 5)  # the server ended it, asking
            assert "retry: 60000" in oldest.lines  # the browser to wait before reconnecting
            await asyncio.sleep(0.3)
            assert not any(s.ended.is_set() for s in [*mine[1:], others, sixth]
                           if isinstance(s, Stream))

    asyncio.run(scenario())


@ONE_BACKEND
def test_streams_over_the_process_cap_get_503_with_retry_after(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server(max_streams=3)

    async def scenario() -> None:
        async with streams(live.base_url, live.token) as open_stream:
            held = [await open_stream(user) for user in ("ann", "bob", "cat")]
            assert all(isinstance(s, Stream) for s in held)
            refused = await open_stream("dan")
            assert isinstance(refused, httpx.Response)
            assert refused.status_code == 503
            assert int(refused.headers["retry-after"]) >= 1
            error = refused.json()["error"]
            assert error["code"] == "too_many_streams" and "stream" in error["message"]
            again = await open_stream("bob")  # under their own cap, but the process is full
            assert isinstance(again, httpx.Response) and again.status_code == 503
            ann = held[0]
            assert isinstance(ann, Stream)
            await ann.response.aclose()  # a hang-up gives the place back
            for _ in range(50):  # the server notices it at its next poll
                admitted = await open_stream("dan")
                if isinstance(admitted, Stream):
                    break
                await asyncio.sleep(0.1)
            assert isinstance(admitted, Stream)

    asyncio.run(scenario())
