"""The client retries a 429 or 503 to a request that is safe to repeat, after the answer's
``Retry-After``, a bounded number of times: against a real server's per-user rate limit, and
a small real server that answers 503 a given number of times."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from servers import LiveServer, serve
from tidings.client import ApiError, AsyncClient, Client, Retry

pytest_plugins = ["servers"]

UNAVAILABLE = {"error": {"code": "unavailable", "message": "the store cannot serve now",
                         "details": []}}


@pytest.mark.parametrize("api_backend", ["sqlite"])
def test_rate_limited_reads_wait_for_retry_after_and_succeed(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server(user_rate_per_second=5)  # a bucket of 10 requests per user
    with live.client(live.token("carol"), retry=Retry(attempts=1)) as impatient, \
            pytest.raises(ApiError) as caught:
        for _ in range(12):
            impatient.unread_count()
    assert caught.value.status == 429 and caught.value.retry_after == 1.0
    started = time.monotonic()
    with live.client(live.token("bob")) as patient:  # by default: 3 requests, 10 s at most
        counts = [patient.unread_count()["count"] for _ in range(12)]
    assert counts == [0] * 12
    assert time.monotonic() - started >= 1.0  # it waited as it was told, at least once


class Flaky:
    """A server that answers 503 (with ``retry_after``, if set) ``failures`` times, then 200."""

    def __init__(self, failures: int, retry_after: str | None = "0") -> None:
        self.failures = failures
        self.retry_after = retry_after
        self.seen: list[tuple[str, float]] = []

    async def handle(self, request: Request) -> JSONResponse:
        self.seen.append((request.method, time.monotonic()))
        if len(self.seen) <= self.failures:
            headers = {} if self.retry_after is None else {"Retry-After": self.retry_after}
            return JSONResponse(UNAVAILABLE, status_code=503, headers=headers)
        return JSONResponse({"count": 7, "display": "7", "id": "1", "status": "accepted"})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/me/notifications/unread-count", self.handle),
                                 Route("/v1/events", self.handle, methods=["POST"])])


@pytest.fixture
def flaky() -> Iterator[Callable[..., tuple[Flaky, str]]]:
    with contextlib.ExitStack() as stack:
        def start(failures: int, retry_after: str | None = "0") -> tuple[Flaky, str]:
            server = Flaky(failures, retry_after)
            return server, stack.enter_context(serve(server.app()))

        yield start


def test_unavailable_is_retried_after_retry_after(flaky: Callable[..., tuple[Flaky, str]]
                                                  ) -> None:
    server, url = flaky(2, retry_after="1")
    with Client(url, "key") as client:
        assert client.unread_count()["count"] == 7
    assert [method for method, _ in server.seen] == ["GET"] * 3
    gaps = [b - a for (_, a), (_, b) in zip(server.seen, server.seen[1:], strict=False)]
    assert all(gap >= 0.95 for gap in gaps), gaps


def test_the_async_client_retries_alike(flaky: Callable[..., tuple[Flaky, str]]) -> None:
    server, url = flaky(2, retry_after=None)  # no Retry-After: a short jittered backoff

    async def count() -> int:
        async with AsyncClient(url, "key", retry=Retry(attempts=3, backoff=0.05)) as client:
            return (await client.unread_count())["count"]

    assert asyncio.run(count()) == 7
    assert len(server.seen) == 3


def test_attempts_are_bounded(flaky: Callable[..., tuple[Flaky, str]]) -> None:
    server, url = flaky(10)
    with Client(url, "key", retry=Retry(attempts=4)) as client, \
            pytest.raises(ApiError) as caught:
        client.unread_count()
    assert caught.value.status == 503
    assert len(server.seen) == 4


def test_a_wait_over_the_cap_is_the_callers(flaky: Callable[..., tuple[Flaky, str]]) -> None:
    server, url = flaky(1, retry_after="120")
    started = time.monotonic()
    with Client(url, "key", retry=Retry(max_wait=5)) as client, \
            pytest.raises(ApiError) as caught:
        client.unread_count()
    assert (caught.value.status, caught.value.retry_after) == (503, 120.0)
    assert len(server.seen) == 1 and time.monotonic() - started < 5


def test_a_post_is_retried_only_with_an_idempotency_key(
        flaky: Callable[..., tuple[Flaky, str]]) -> None:
    server, url = flaky(2)
    with Client(url, "key") as client:
        with pytest.raises(ApiError):
            client.publish("mention", actor="alice", recipients=["bob"])
        assert len(server.seen) == 1  # it may have been done: not sent twice
        assert client.publish("mention", actor="alice", recipients=["bob"],
                              idempotency_key="k1")["status"] == "accepted"
    assert len(server.seen) == 3
