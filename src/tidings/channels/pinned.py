"""One HTTP POST to an address checked beforehand, bounded in time and in what it reads.

- **Pinned address.** The connection goes to an address :func:`tidings.channels.netguard.check`
  returned, never to a new DNS answer; the request keeps the URL's host in its Host header and
  in TLS (SNI and certificate check), so a virtual host or an HTTPS receiver sees nothing odd.
- **Time.** ``connect`` seconds to connect, ``read`` seconds for each read, and the whole
  exchange ends after ``connect + read`` seconds whatever the receiver does (a receiver that
  trickles its answer a byte at a time is cut off: a watchdog shuts the socket down).
- **Size.** Only the status line and headers are read (httpcore bounds them); the body is never
  read, so a receiver cannot make the worker download anything.
- Redirects are not followed and no proxy settings from the environment apply.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from tidings.channels.netguard import Target


@dataclass(frozen=True)
class Timeouts:
    connect: float = 3.0
    read: float = 5.0

    @property
    def total(self) -> float:
        return self.connect + self.read


@dataclass(frozen=True)
class Answer:
    """The status (None if none came) and, unless it is a 2xx, what went wrong."""

    status: int | None
    error: str | None
    retry_after: str | None = None  # the answer's Retry-After header, if any


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every POST of this process shares: httpx's default builds
    one per transport, reading the CA bundle each time (about 50 ms of CPU a delivery)."""
    return httpx.create_ssl_context()


class PinnedTransport(httpx.HTTPTransport):
    """Connects to ``address`` whatever the request's URL names; keeps the URL's host for the
    Host header (set by the client) and for TLS (``sni_hostname``)."""

    def __init__(self, address: str, **options: Any) -> None:
        super().__init__(retries=0, **options)
        self.address = address

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.raw_host.decode("ascii")
        request.url = request.url.copy_with(host=self.address)
        request.extensions = {**request.extensions, "sni_hostname": host}
        return super().handle_request(request)


class _Watchdog:
    """Shuts down the request's sockets when the deadline passes, which ends any read."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's trace hook: note each socket as it is connected (and wrapped in TLS)."""
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.append(sock)
                if self.expired:
                    _shutdown(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed already
        # the plain socket's shutdown, also for a TLS socket: wakes a blocked read at once
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def post(target: Target, body: bytes, headers: Mapping[str, str], timeouts: Timeouts) -> Answer:
    """POST ``body`` to the target, trying its checked addresses in order until one connects."""
    if not target.addresses:
        return Answer(None, f"{target.host} has no address")
    timeout = httpx.Timeout(timeouts.read, connect=timeouts.connect)
    error = "no address tried"
    with _Watchdog(timeouts.total) as watchdog:
        for address in target.addresses:
            client = httpx.Client(transport=PinnedTransport(address, verify=tls_context()),
                                  timeout=timeout, follow_redirects=False, trust_env=False)
            try:
                with client, client.stream("POST", target.url, content=body,
                                           headers=dict(headers),
                                           extensions={"trace": watchdog.trace}) as response:
                    status = response.status_code
                    retry_after = response.headers.get("retry-after")
            except httpx.ConnectError as exc:
                error = f"ConnectError: {exc}"
                if watchdog.expired:
                    break
                continue  # the next address, if the name has several
            except httpx.HTTPError as exc:
                if watchdog.expired:
                    return Answer(None, f"no answer within {timeouts.total:g} s")
                return Answer(None, f"{type(exc).__name__}: {exc}"[:1000])
            if 200 <= status < 300:
                return Answer(status, None)
            return Answer(status, f"receiver answered {status}", retry_after)
    if watchdog.expired:
        return Answer(None, f"no answer within {timeouts.total:g} s")
    return Answer(None, error[:1000])
