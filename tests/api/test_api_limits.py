"""Limits of the HTTP API, through a real server: a request that can never fit the rate limit
is told so (not sent to wait for ever), user tokens have a rate limit of their own, and a
user's preferences, subscriptions and a request's headers have a size each site may set.
Each limit is a clear 4xx naming it; nothing over it is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contract import error_of
from engines import table_counts
from servers import LiveServer

pytest_plugins = ["servers"]
pytestmark = pytest.mark.parametrize("api_backend", ["sqlite"])


# -- the rate limits -------------------------------------------------------------------------


def test_a_batch_over_the_burst_is_refused_for_good_not_told_to_wait(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server(rate_per_second=2)  # a bucket of 4 events
    event = {"type": "mention", "recipients": ["bob"]}
    with live.http() as http:
        before = table_counts(live.tidings)
        response = http.post("/v1/events/batch", json={"events": [event] * 5})
        error = error_of(response)
        assert response.status_code == 413, error
        assert "retry-after" not in response.headers
        assert "4" in error["message"] and "TIDINGS_RATE_LIMIT" in error["message"], error
        assert table_counts(live.tidings) == before
        response = http.post("/v1/events/batch", json={"events": [event] * 4})
        assert response.status_code == 202, response.text


def test_user_tokens_are_rate_limited_per_user(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server(user_rate_per_second=5)  # a bucket of 10 requests per user
    with live.http(live.token("bob")) as bob, live.http(live.token("carol")) as carol, \
            live.http() as server:
        answers = [bob.get("/v1/me/notifications/unread-count").status_code
                   for _ in range(10)]
        assert answers == [200] * 10
        for response in (bob.post("/v1/me/notifications/read", json={"all": True}),
                         bob.get("/v1/users/bob/notifications/unread-count"),
                         bob.get("/v1/users/bob/notifications")):
            error = error_of(response)
            assert response.status_code == 429, error
            assert error["code"] == "rate_limited"
            assert int(response.headers["retry-after"]) >= 1
            assert "TIDINGS_USER_RATE_LIMIT" in error["message"], error
        # one user's limit is not another's, nor the server key's
        assert carol.get("/v1/me/notifications/unread-count").status_code == 200
        assert server.get("/v1/users/bob/notifications/unread-count").status_code == 200


# -- quotas ----------------------------------------------------------------------------------


def _refused(response: Any, status: int, *names: str) -> None:
    error = error_of(response)
    assert response.status_code == status, (response.status_code, error)
    named = error["message"] + " " + " ".join(str(d.get("field")) for d in error["details"])
    for name in names:
        assert name in named, error


def test_preferences_have_a_size_limit(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(config={"max_preference_categories": 3})
    switches = {f"cat{n}": {"email": False} for n in range(4)}
    with live.http(live.token("bob")) as bob:
        before = table_counts(live.tidings)
        _refused(bob.put("/v1/me/preferences", json={"channels": switches}), 422,
                 "channels", "3", "TIDINGS_MAX_PREFERENCE_CATEGORIES")
        assert table_counts(live.tidings) == before
        switches.pop("cat3")
        response = bob.put("/v1/me/preferences", json={"channels": switches})
        assert response.status_code == 200, response.text


def test_default_preferences_limit_refuses_eighty_thousand_categories(
        live: LiveServer) -> None:
    switches = {f"c{n}": {"web": False} for n in range(80_000)}
    with live.http(live.token("bob")) as bob:
        _refused(bob.put("/v1/me/preferences", json={"channels": switches}), 422, "channels")


def test_subscriptions_per_user_are_limited(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(config={"max_subscriptions": 2})
    with live.http(live.token("bob")) as bob, live.http() as server:
        for n in range(2):
            response = bob.post("/v1/me/subscriptions", json={"object": f"page:{n}"})
            assert response.status_code == 201, response.text
        before = table_counts(live.tidings)
        _refused(bob.post("/v1/me/subscriptions", json={"object": "page:9"}), 409,
                 "2", "TIDINGS_MAX_SUBSCRIPTIONS")
        _refused(server.post("/v1/users/bob/subscriptions", json={"object": "page:9"}), 409,
                 "TIDINGS_MAX_SUBSCRIPTIONS")
        assert table_counts(live.tidings) == before
        # the same subscription again is no new one
        response = bob.post("/v1/me/subscriptions", json={"object": "page:1"})
        assert response.status_code in (200, 201), response.text


def test_a_megabyte_of_headers_is_refused_by_default(live: LiveServer) -> None:
    with live.http() as http:
        response = http.get("/v1/types", headers={"X-Padding": "x" * (1024 * 1024)})
        _refused(response, 431, "header", "TIDINGS_MAX_HEADER_BYTES")


def test_request_headers_have_a_size_limit(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(max_header_bytes=8 * 1024)
    with live.http() as http:
        response = http.get("/v1/types", headers={"X-Padding": "x" * (1024 * 1024)})
        _refused(response, 431, "header", "8192")
        response = http.get("/v1/types", headers={"X-Padding": "x" * 4096})
        assert response.status_code == 200, response.text
