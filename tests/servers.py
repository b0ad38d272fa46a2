"""A real tidings HTTP server on loopback, for tests that go through the network like a client.

Load the fixtures with ``pytest_plugins = ["servers"]`` in a test module::

    def test_publish(live: LiveServer) -> None:
        with live.client() as server:                       # the server key
            server.publish("mention", actor="alice", recipients=["bob"])
        with live.client(live.token("bob")) as bob:         # bob's user token
            assert wait_for(lambda: bob.unread_count()["count"] == 1)

Fixtures:

``api_backend``
    ``"sqlite"`` or ``"postgresql"``: the API suite runs on these two (MariaDB is covered by the
    engine's suite; the HTTP layer does not depend on the dialect).
``api_store_url``
    A clean database at head on ``api_backend`` (cloned from the session's template), dropped after.
``start_server``
    A factory: ``start_server(config={...}, **create_app_options)`` builds an app with
    :func:`create_app` (over an engine whose ``Config`` takes the fields of ``config``) on
    ``api_store_url`` (the types of ``engines.py``, a wall clock, the embedded worker, a 50 ms
    stream poll, :data:`SERVER_KEY` and :data:`TOKEN_SECRET`), serves it with uvicorn on a free
    loopback port in a background thread and returns a :class:`LiveServer`; it stops after the
    test.
``live``
    ``start_server()`` with the defaults.
``shared_live``
    One server per module on SQLite, for cases that change nothing (bad credentials, bad bodies).
``openapi_spec``
    The ``/openapi.json`` of ``shared_live``.

Test modules import helpers from here before pytest loads it as a plugin, so it opts out of
assertion rewriting (it asserts nothing): PYTEST_DONT_REWRITE.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
import uvicorn

from engines import TYPES
from stores import SqlStores
from tidings.api.app import create_app
from tidings.client import Client
from tidings.client._requests import tls_context
from tidings.config import Config
from tidings.domain.types import EventType
from tidings.engine import Tidings

SERVER_KEY = "test-server-key-0123456789"
TOKEN_SECRET = "test-token-secret-0123456789abcdef"  # 32+ bytes, as HS256 wants
API_BACKENDS = ["sqlite", "postgresql"]
STARTUP_SECONDS = 10.0


@dataclass
class LiveServer:
    """A running server: its address and the engine behind it (to look inside the store)."""

    base_url: str
    tidings: Tidings
    server: uvicorn.Server | None = None

    def connections(self) -> int:
        """The HTTP connections the server holds open now (its own count)."""
        assert self.server is not None
        return len(self.server.server_state.connections)

    def client(self, token: str | None = SERVER_KEY, **options: Any) -> Client:
        """The Python client, with the server key unless given a user token (or None)."""
        return Client(self.base_url, token, **options)

    def http(self, token: str | None = SERVER_KEY) -> httpx.Client:
        """A bare httpx client, for what the Python client does not send (bad bodies…)."""
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=10.0,
                            verify=tls_context())

    def settled(self, timeout: float = 10.0) -> bool:
        """Wait until the worker has run every queued job (fan-out done); False on timeout."""
        return bool(wait_for(lambda: not self.tidings.queue.counts_by_func(), timeout))

    def token(self, user: str, *, ttl_seconds: int = 3600, secret: str = TOKEN_SECRET,
              **claims: Any) -> str:
        """A user token signed here, as the application's backend would mint it."""
        return jwt.encode({"sub": user, "exp": int(time.time()) + ttl_seconds, **claims},
                          secret, algorithm="HS256")


class _QuickServer(uvicorn.Server):
    """uvicorn's server, looking for ``should_exit`` every 10 ms instead of every 100 ms:
    a test server stops as soon as its test is done (hundreds of them in a run)."""

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 8_640_000
            await asyncio.sleep(0.01)


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port (in a thread); yield its base URL."""
    with serve_server(app) as (base_url, _server):
        yield base_url


@contextlib.contextmanager
def serve_server(app: Any, *, send_buffer: int | None = None,
                 ) -> Iterator[tuple[str, uvicorn.Server]]:
    """:func:`serve`, yielding the uvicorn server too (to count its connections).
    ``send_buffer`` sets the kernel's send buffer (bytes) of every connection it accepts
    (instead of letting it grow to megabytes), so a client that does not read stalls the
    server's writes after a few frames."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer is not None:  # accepted sockets inherit it
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False,
                            timeout_graceful_shutdown=1)
    server = _QuickServer(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"the test server on port {port} did not start")
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(STARTUP_SECONDS)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"the test server on port {port} did not stop")


def wait_for(condition: Callable[[], Any], timeout: float = 5.0, every: float = 0.02) -> Any:
    """Poll ``condition`` until it returns something truthy (returned) or ``timeout`` passes
    (then the last value, falsy, is returned so the test's assert shows it)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)


def start(stack: contextlib.ExitStack, url: str, *, config: dict[str, Any] | None = None,
          send_buffer: int | None = None, types: tuple[EventType, ...] = TYPES,
          **options: Any) -> LiveServer:
    """Serve an app on ``url`` until ``stack`` closes (the server stops before the engine);
    ``config`` sets fields of the engine's :class:`Config` (``timeline_model="pull"``…),
    ``send_buffer`` the server's (see :func:`serve_server`); ``types=()`` serves a fresh
    installation, with no type declared; ``host=`` (an option) is a function that mounts the
    app in an application of its own and returns that, which is then served."""
    engine_config = Config(database_url=url, api_keys=(SERVER_KEY,), token_secret=TOKEN_SECRET,
                           **(config or {}))
    tidings = stack.enter_context(Tidings(engine_config, types=types))
    tidings.load_types()
    settings: dict[str, Any] = {"api_keys": (SERVER_KEY,), "token_secret": TOKEN_SECRET,
                                "run_worker": True, "stream_interval": 0.05, **options}
    # The embedded worker queues and runs a maintenance job as it starts; wait for it, so a
    # test comparing the store before and after a request does not see that job come and go.
    first_job = threading.Event()
    tidings.listeners.append(
        lambda name, _value: first_job.set() if name == "job_completed" else None)
    host = settings.pop("host", None)  # host(app): an application the app is mounted in
    app = create_app(tidings, **settings)
    base_url, server = stack.enter_context(serve_server(app if host is None else host(app),
                                                         send_buffer=send_buffer))
    if settings["run_worker"] and not first_job.wait(STARTUP_SECONDS):
        raise RuntimeError("the test server's worker did not run its start-up job")
    return LiveServer(base_url, tidings, server)


@pytest.fixture(params=API_BACKENDS)
def api_backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def api_store_url(api_backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    stores: SqlStores = request.getfixturevalue(f"{api_backend}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


@pytest.fixture
def start_server(api_store_url: str) -> Iterator[Callable[..., LiveServer]]:
    with contextlib.ExitStack() as stack:
        yield lambda **options: start(stack, api_store_url, **options)


@pytest.fixture
def live(start_server: Callable[..., LiveServer]) -> LiveServer:
    return start_server()


@pytest.fixture(scope="module")
def shared_live(sqlite_stores: SqlStores) -> Iterator[LiveServer]:
    """One server per test module, on SQLite, for checks of the HTTP layer that change nothing
    (authentication, malformed requests): a server per case would dominate the run time."""
    url = sqlite_stores.clone()
    with contextlib.ExitStack() as stack:
        yield start(stack, url)
    sqlite_stores.drop(url)


@pytest.fixture(scope="module")
def openapi_spec(shared_live: LiveServer) -> dict[str, Any]:
    """The ``/openapi.json`` the server publishes."""
    with shared_live.http(None) as http:
        response = http.get("/openapi.json")
    response.raise_for_status()
    document: dict[str, Any] = response.json()
    return document
