"""The Python client on its own, against ``httpx.MockTransport``: how it spells requests, reads
errors and parses Server-Sent Events. ``test_api.py`` drives it against a real server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

import tidings.client
from tidings.client import ApiError, AsyncClient, Client, SseEvent
from tidings.client_base import SseParser, user_path
from tidings.exceptions import TidingsError

EVERYTHING = {"items": [], "next_cursor": None, "updated": 1, "id": "1", "status": "accepted"}


def mock(answer: httpx.Response | None = None) -> tuple[list[httpx.Request], httpx.MockTransport]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer if answer is not None else httpx.Response(200, json=EVERYTHING)

    return seen, httpx.MockTransport(handle)


def test_user_none_means_me_and_ids_are_escaped() -> None:
    assert user_path(None, "/timeline") == "/v1/me/timeline"
    assert user_path("bob", "/timeline") == "/v1/users/bob/timeline"
    assert user_path("..", "") == "/v1/users/%2E%2E"
    assert user_path("a/b", "") == "/v1/users/a%2Fb"
    assert user_path("x:y@z.org", "") == "/v1/users/x%3Ay%40z.org"


def test_requests_carry_the_token_and_the_documented_spelling() -> None:
    seen, transport = mock()
    with Client("http://tidings.test/", "tok", transport=transport) as client:
        client.notifications(user="bob", types=["a", "b"], unread=False, limit=5)
        client.mark_read(match={"actor": "alice"})
        client.mark_read(all=True, section="alert")
        client.publish("mention", actor="alice", recipients=("bob",))
    listing, by_match, all_read, publish = seen
    assert listing.headers["authorization"] == "Bearer tok"
    assert listing.url.path == "/v1/users/bob/notifications"
    assert dict(listing.url.params) == {"types": "a,b", "unread": "false", "limit": "5"}
    assert (by_match.url.path, json.loads(by_match.content)) == (
        "/v1/me/notifications/read", {"match": {"actor": "alice"}})
    assert json.loads(all_read.content) == {"all": True, "section": "alert"}
    assert json.loads(publish.content) == {"type": "mention", "actor": "alice",
                                           "recipients": ["bob"]}


def test_errors_raise_api_error_with_the_body_and_retry_after() -> None:
    body = {"error": {"code": "rate_limited", "message": "slow down",
                      "details": [{"field": "type", "message": "x"}]}}
    _, transport = mock(httpx.Response(429, json=body, headers={"Retry-After": "3",
                                                                "X-Request-Id": "r1"}))
    with Client("http://tidings.test", "k", transport=transport) as client, \
            pytest.raises(ApiError) as caught:
        client.publish("mention")
    error = caught.value
    assert isinstance(error, TidingsError)
    assert (error.status, error.code, error.message) == (429, "rate_limited", "slow down")
    assert error.details == [{"field": "type", "message": "x"}]
    assert (error.retry_after, error.request_id) == (3.0, "r1")
    assert str(error) == "429 rate_limited: slow down"


def test_an_error_that_is_not_the_api_shape_still_raises() -> None:
    _, transport = mock(httpx.Response(502, text="<html>bad gateway</html>"))
    with Client("http://tidings.test", "k", transport=transport) as client, \
            pytest.raises(ApiError) as caught:
        client.healthz()
    assert (caught.value.status, caught.value.code) == (502, "http_502")
    assert "bad gateway" in caught.value.message


def test_sse_frames_become_event_data_pairs() -> None:
    parser = SseParser()
    lines = ["retry: 2000", "", ": keepalive", "", "event: unread", 'data: {"count": 1,',
             'data: "display": "1"}', "", "data: plain text", "", "event: empty", ""]
    frames = [frame for line in lines if (frame := parser.feed(line)) is not None]
    assert frames == [("unread", {"count": 1, "display": "1"}), ("message", "plain text")]


def test_stream_reads_events_over_a_mock_transport() -> None:
    text = 'event: unread\ndata: {"count": 0, "display": "0"}\n\n'
    _, transport = mock(httpx.Response(200, text=text,
                                       headers={"content-type": "text/event-stream"}))
    with Client("http://tidings.test", "k", transport=transport) as client:
        assert list(client.stream(timeout=5, reconnect=False)) == [
            ("unread", {"count": 0, "display": "0"})]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_stream_reconnects_with_the_last_event_id(flavour: str) -> None:
    """An ended stream is opened again after the server's ``retry:``, from the last id; a
    busy server (503) is waited out; a refusal that is the caller's (401) is raised."""
    answers = [
        httpx.Response(200, text='retry: 10\nid: 1-1-0\nevent: unread\ndata: {"count": 1}\n\n'
                                 'id: 1-2-0\nevent: notification\ndata: {"id": "2"}\n\n'),
        httpx.Response(503, json={"error": {"code": "too_many_streams", "message": "busy"}},
                       headers={"Retry-After": "0"}),
        httpx.Response(200, text='id: 1-3-0\nevent: notification\ndata: {"id": "3"}\n\n'),
        httpx.Response(401, json={"error": {"code": "unauthorized", "message": "expired"}}),
    ]
    sent: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("last-event-id"))
        return answers[len(sent) - 1]

    got: list[SseEvent] = []

    async def read_async() -> None:
        async with AsyncClient("http://tidings.test", "k",
                               transport=httpx.MockTransport(handle)) as client:
            async for event in client.stream(timeout=10, last_event_id="0-0-0"):
                got.append(event)

    with pytest.raises(ApiError) as raised:
        if flavour == "async":
            asyncio.run(read_async())
        else:
            with Client("http://tidings.test", "k",
                        transport=httpx.MockTransport(handle)) as client:
                got.extend(client.stream(timeout=10, last_event_id="0-0-0"))
    assert raised.value.status == 401
    assert sent == ["0-0-0", "1-2-0", "1-2-0", "1-3-0"]
    assert [(e.event, e.data["id"] if e.event != "unread" else None, e.id) for e in got] == [
        ("unread", None, "1-1-0"), ("notification", "2", "1-2-0"),
        ("notification", "3", "1-3-0")]


def test_async_client_has_the_same_methods() -> None:
    public = {name for name in dir(Client) if not name.startswith("_")} - {"close"}
    assert public == {name for name in dir(AsyncClient) if not name.startswith("_")} - {
        "aclose"}

    async def run() -> Any:
        seen: list[httpx.Request] = []

        def handle(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(200, json={"count": 2, "display": "2"})

        async with AsyncClient("http://tidings.test", "k",
                               transport=httpx.MockTransport(handle)) as client:
            answer = await client.unread_count(user="bob", section="message")
        return answer, seen[0]

    answer, request = asyncio.run(run())
    assert answer == {"count": 2, "display": "2"}
    assert request.url.path == "/v1/users/bob/notifications/unread-count"
    assert dict(request.url.params) == {"section": "message"}


def test_all_names_are_exported() -> None:
    public = {name for name, value in vars(tidings.client).items()
              if not name.startswith("_") and isinstance(value, type)
              and value.__module__.startswith("tidings.client")}
    assert public == set(tidings.client.__all__) - {"Preferences"}


def test_types_keeps_the_whole_answer_and_iterates_as_before() -> None:
    item = {"name": "mention", "category": "general"}
    _, transport = mock(httpx.Response(200, json={"items": [item],
                                                  "enabled_channels": ["web", "email"]}))
    with Client("http://tidings.test/", "tok", transport=transport) as client:
        answer = client.types()

    assert [t["name"] for t in answer] == ["mention"] and answer[0] == item  # a list, as before
    assert answer.items == [item] and answer.enabled_channels == ["web", "email"]


def test_stream_reconnection_backs_off_with_jitter() -> None:
    """The first wait is the server's ``retry:``; while reconnecting fails each wait is drawn
    at random between that and twice as long as the last bound (capped at a minute); a
    ``Retry-After`` is waited out whole; a stream that opens again starts over."""
    from tidings.client._sse import MAX_RECONNECT_SECONDS, Backoff

    backoff = Backoff()
    assert backoff.delay(2.0) == 2.0
    waits = [backoff.delay(2.0) for _ in range(12)]
    assert all(2.0 <= wait <= MAX_RECONNECT_SECONDS for wait in waits)
    assert len(set(waits)) > 1  # jittered, not in lock-step
    assert max(waits[-6:]) > 8.0  # it grew
    assert backoff.delay(2.0, retry_after=30.0) == 30.0
    backoff.reached()
    assert backoff.delay(None) == 2.0  # the client's default when the server said nothing


def test_a_frame_cut_short_is_not_dispatched_after_reconnecting() -> None:
    parser = SseParser()
    for line in ["id: 1-1-0", "event: unread", 'data: {"count": 1}', "", "event: notification",
                 'data: {"id": "2", "ti']:  # the connection broke inside this frame
        parser.feed(line)
    assert parser.headers()["Last-Event-ID"] == "1-1-0"
    frames = [parser.feed(line) for line in ["retry: 2000", "", "id: 1-2-0",
                                             "event: notification", 'data: {"id": "2"}', ""]]
    assert [f for f in frames if f is not None] == [("notification", {"id": "2"})]
    assert parser.retry == 2.0 and parser.last_event_id == "1-2-0"
