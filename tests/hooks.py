"""Webhook receivers on loopback for the webhook tests, and an engine set up to deliver to them.

``Receiver`` is an HTTP server answering given statuses; ``RawServer`` runs a handler on every
TCP connection, for receivers that misbehave: ``hold`` (accepts and never answers), ``trickle``
(answers one header line at a time, slowly), ``flood`` (a 256 MB body). Both listen on
127.0.0.1 unless given another loopback ``host`` (127.0.0.2: a second webhook host).

Test modules import helpers from here before pytest loads it as a plugin (for ``hook_store``), so
it opts out of assertion rewriting (it asserts nothing): PYTEST_DONT_REWRITE.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest
from sqlalchemy import select

from live import free_port
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.store.sql.schema import jobs, webhook_deliveries

SECRET = "webhook-secret-for-the-tests-0123456789"
LOOPBACK = ("127.0.0.1",)  # the operator's allow-list that lets tests use local receivers


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def hook_store(request: pytest.FixtureRequest) -> Iterator[str]:
    stores = request.getfixturevalue(f"{request.param}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


def make(url: str, *, clock: FrozenClock | None = None, **settings: Any
         ) -> tuple[Tidings, FrozenClock]:
    """An engine with a ``mention`` type that goes to the web and webhooks; loopback receivers
    allowed unless ``webhook_allow`` says otherwise."""
    clock = clock or FrozenClock()
    settings = {"job_backoff_seconds": 2.0, "webhook_allow": LOOPBACK, "webhook_secret": SECRET,
                **settings}
    t = Tidings(Config(database_url=url, **settings),
                types=[EventType("mention", channels=("web", "webhook"),
                                 audience=("recipients",))], clock=clock)
    return t, clock


def deliveries(t: Tidings) -> list[Any]:
    """The webhook attempts logged, in order."""
    with t.store.db.read() as conn:
        return list(conn.execute(select(webhook_deliveries).order_by(webhook_deliveries.c.id)))


def queued(t: Tidings, func: str = "webhook") -> list[Any]:
    with t.store.db.read() as conn:
        return list(conn.execute(select(jobs).where(jobs.c.func == func).order_by(jobs.c.id)))


class Receiver:
    """Answers ``statuses`` in turn (then 200) and keeps every request."""

    def __init__(self, statuses: list[int], host: str = "127.0.0.1") -> None:
        self.host = host
        self.statuses = list(statuses)
        self.requests: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(receiver.answer(
                    {"headers": dict(self.headers), "body": body, "path": self.path}))
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer((host, self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/hook"

    def answer(self, request: dict[str, Any]) -> int:
        """Keep ``request``; the status to answer it with."""
        self.requests.append(request)
        return self.statuses.pop(0) if self.statuses else 200

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class RawServer:
    """A loopback TCP server that hands each connection to ``handle(server, conn)`` in a
    thread of its own; ``closing`` is set when the test is done with it."""

    def __init__(self, handle: Callable[[RawServer, socket.socket], None],
                 host: str = "127.0.0.1") -> None:
        self.handle = handle
        self.host = host
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self.sent = 0  # bytes a handler reports having sent
        self.closing = threading.Event()
        self.lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/hook"

    def _serve(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                self._conns.append(conn)
            threading.Thread(target=self.handle, args=(self, conn), daemon=True).start()

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        self._thread.join(5)
        self.sock.close()
        with self.lock:
            for conn in self._conns:
                conn.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    conn.settimeout(5)
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def hold(server: RawServer, conn: socket.socket) -> None:
    """Accept and never answer (nor read)."""
    server.closing.wait()


def trickle(server: RawServer, conn: socket.socket, seconds: float = 30.0) -> None:
    """Answer a header line every 0.2 s for ``seconds``: each read succeeds, none ends."""
    try:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline and not server.closing.is_set():
            conn.sendall(b"X-Slow-%d: y\r\n" % n)
            n += 1
            time.sleep(0.2)
        conn.sendall(b"Content-Length: 0\r\n\r\n")
    except OSError:
        pass


FLOOD_BYTES = 256 * 1024 * 1024


def flood(server: RawServer, conn: socket.socket) -> None:
    """Answer 200 with a 256 MB body, counting what the client lets through."""
    try:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % FLOOD_BYTES)
        chunk = b"x" * 65536
        for _ in range(FLOOD_BYTES // len(chunk)):
            conn.sendall(chunk)
            with server.lock:
                server.sent += len(chunk)
    except OSError:
        pass
