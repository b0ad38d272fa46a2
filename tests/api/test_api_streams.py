"""Live streams are bounded: a user holds at most 5 open streams (a sixth closes the oldest),
a process at most ``max_streams`` (200 by default; beyond it 503 with ``Retry-After``), and a
closed stream gives its place back. Through a real server, with real SSE connections."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import pytest

from servers import LiveServer
from tidings.domain.events import Event

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


class StalledClient:
    """A raw connection that asks for a stream and then never reads: a small receive buffer,
    so the server's writes stop as soon as its own buffers are full."""

    def __init__(self, base_url: str, token: str) -> None:
        host, port = base_url.removeprefix("http://").split(":")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((host, int(port)))
        self.sock.sendall(f"GET /v1/me/stream HTTP/1.1\r\nHost: {host}\r\n"
                          f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode())

    def closed_by_server(self, timeout: float) -> bool:
        """Read at last: True if the stream ends (the server closed it) within ``timeout``."""
        self.sock.settimeout(0.5)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if not self.sock.recv(1 << 20):
                    return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return False


@ONE_BACKEND
def test_streams_whose_clients_never_read_are_closed_and_stay_inside_the_caps(
        start_server: Callable[..., LiveServer]) -> None:
    """Six streams of one user whose client never reads, and large notifications for them:
    each write has a deadline, an evicted stream's connection is closed at once, and the
    server never holds more of them than the caps allow; a reading client is not disturbed."""
    live = start_server(max_streams_per_user=2, max_streams=3, send_buffer=16_384,
                        stream_write_timeout=0.3)
    big = {"text": "x" * 30_000}  # each `notification` frame carries it
    stop = threading.Event()

    def publish() -> None:
        while not stop.is_set():
            live.tidings.publish(Event("mention", actor="alice", recipients=["bob"],
                                       payload=big))
            stop.wait(0.05)

    async def scenario() -> None:
        async with streams(live.base_url, live.token) as open_stream:
            carol = await open_stream("carol")  # reads everything
            assert isinstance(carol, Stream)
            publisher = threading.Thread(target=publish, daemon=True)
            publisher.start()
            stalled, held = [], []
            try:
                for _ in range(6):
                    stalled.append(StalledClient(live.base_url, live.token("bob")))
                    for _ in range(10):  # 0.5 s of the stream's writes filling the buffers
                        held.append(live.connections() - 1)  # all but carol's
                        await asyncio.sleep(0.05)
            finally:
                stop.set()
                publisher.join()
            # a user's streams (and the one asking to be let in) never pass the per-user cap
            assert max(held) <= 2 + 1, held
            await asyncio.sleep(0.5)  # past the write deadline: every stalled one was cut
            assert all(client.closed_by_server(timeout=5) for client in stalled)
            assert live.connections() == 1
            # their places are free again: the process cap (3) admits two more
            more = [await open_stream(user) for user in ("dan", "erin")]
            assert all(isinstance(s, Stream) for s in more)
            assert not carol.ended.is_set()
            live.tidings.publish(Event("mention", actor="alice", recipients=["carol"]))
            await asyncio.sleep(0.5)
            assert sum(line.startswith("event: notification") for line in carol.lines) == 1

    asyncio.run(scenario())
