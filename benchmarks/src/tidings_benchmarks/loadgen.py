"""Closed-loop HTTP load on loopback: N connections, each sending its next request as soon as the
previous answer is in, for a fixed time.

The client is a minimal HTTP/1.1 keep-alive client on asyncio streams (what ``wrk`` does), not
httpx: the load generator shares the machine with the server processes, and a client that spends
a few hundred microseconds of CPU per request would measure itself as much as the server. It
speaks just what uvicorn answers these routes with: a status line, headers and a
``Content-Length`` body.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tidings_benchmarks import BenchFailure


@dataclass(frozen=True)
class Request:
    """One request, ready to send: method, path (with query) and JSON body."""

    method: str
    path: str
    body: bytes = b""


@dataclass(frozen=True)
class Load:
    """The outcome of one timed phase."""

    seconds: float
    latencies: tuple[float, ...]  # of the answers with an expected status, in seconds
    statuses: dict[int, int]

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds > 0 else 0.0

    @property
    def errors(self) -> int:
        """Answers with another status than expected."""
        return sum(self.statuses.values()) - len(self.latencies)


class Connection:
    """One keep-alive HTTP/1.1 connection to ``127.0.0.1:port``."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self._head = (f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                      "User-Agent: tidings-bench\r\n").encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def send(self, request: Request) -> tuple[int, bytes]:
        """Send ``request``; return the status and the body."""
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = f"{request.method} {request.path} HTTP/1.1\r\n".encode() + self._head
        if request.body:
            head += (f"Content-Type: application/json\r\n"
                     f"Content-Length: {len(request.body)}\r\n").encode()
        self._writer.write(head + b"\r\n" + request.body)
        raw = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {name.strip().lower(): value.strip()
                   for name, _, value in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" not in headers:
            raise BenchFailure(f"{request.method} {request.path}: an answer without "
                               f"Content-Length ({status}, {headers})")
        body = await self._reader.readexactly(int(headers["content-length"]))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


async def _closed_loop(port: int, token: str, feed: Iterator[Request], expected: int,
                       concurrency: int, seconds: float, renew: int | None,
                       check: Callable[[bytes], None] | None) -> Load:
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    clock = time.perf_counter
    deadline = clock() + seconds

    async def client() -> None:
        connection = Connection(port, token)
        sent = 0
        try:
            while clock() < deadline:
                if renew is not None and sent and sent % renew == 0:
                    connection.close()
                sent += 1
                request = next(feed)
                before = clock()
                status, body = await connection.send(request)
                after = clock()
                statuses[status] += 1
                if status == expected:
                    latencies.append(after - before)
                    if check is not None and len(latencies) % 97 == 0:
                        check(body)  # a sample of the answers is read, not only counted
        finally:
            connection.close()

    started = clock()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return Load(clock() - started, tuple(latencies), dict(statuses))


def run_load(port: int, token: str, requests: Iterator[Request], *, expected: int,
             concurrency: int, seconds: float, renew: int | None = None,
             check: Callable[[bytes], None] | None = None) -> Load:
    """Send the next of ``requests`` (an endless iterator) on each of ``concurrency``
    connections, one after another, for ``seconds``; count the answers with status
    ``expected`` and time them. ``renew``: open a new connection after that many requests."""
    return asyncio.run(_closed_loop(port, token, requests, expected, concurrency, seconds,
                                    renew, check))
