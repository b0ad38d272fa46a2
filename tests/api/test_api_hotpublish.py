"""A plain ``POST /v1/events`` is answered by :mod:`tidings.api.hotpublish`, ahead of FastAPI's
route, with exactly what that route answers (body, status, headers): the same request sent to
an app without the hot route gets the same answer, errors included; every request the hot
route cannot answer in full reaches the FastAPI route with its body, for its validation."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tidings.api import hotpublish
from tidings.api.app import create_app
from tidings.engine import Tidings

KEY = "k" * 32
SECRET = "s" * 32
SERVER = {"Authorization": f"Bearer {KEY}"}
PATH = "/v1/events"


def _app(t: Tidings, *, hot: bool) -> Any:
    app = create_app(t, api_keys=(KEY,), token_secret=SECRET)
    if not hot:
        app.router.routes[:] = [r for r in app.router.routes
                                if not isinstance(r, hotpublish.HotPublish)]
    return app


def _same(hot: TestClient, plain: TestClient, body: Any, headers: dict[str, str] | None,
          *, path: str = PATH, method: str = "POST") -> int:
    """The hot app first (a new event is created there), then the plain one."""
    ours = hot.request(method, path, json=body, headers=headers)
    theirs = plain.request(method, path, json=body, headers=headers)
    assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), body

    def kept(response: Any) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in response.headers.items() if k != "x-request-id")

    assert kept(ours) == kept(theirs), body
    return ours.status_code


def test_the_hot_publish_answers_as_the_fastapi_route_does(
        t: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    answered: list[int] = []
    real = hotpublish.SafeJSONResponse

    def counted(*args: Any, **kwargs: Any) -> Any:
        answered.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hotpublish, "SafeJSONResponse", counted)
    hot, plain = TestClient(_app(t, hot=True)), TestClient(_app(t, hot=False))
    token = plain.post("/v1/tokens", json={"user": "bob"}, headers=SERVER).json()["token"]
    event = {"type": "mention", "actor": "alice", "recipients": ["bob"],
             "payload": {"line": 3}, "idempotency_key": "hot-1"}

    # answered here: the plain publish (the plain app then returns the same event)
    assert _same(hot, plain, event, SERVER) == 202
    assert _same(hot, plain, {"type": "mention", "recipients": ["bob"], "exclude": ["x"],
                              "idempotency_key": "hot-2"}, SERVER) == 202
    assert len(answered) == 2
    # and its errors come from the engine through the same handlers
    assert _same(hot, plain, {**event, "actor": "carol"}, SERVER) == 409
    assert _same(hot, plain, {"type": "no-such-type", "recipients": ["bob"]}, SERVER) == 422
    assert _same(hot, plain, {**event, "recipients": ["not a user"],
                              "idempotency_key": "hot-3"}, SERVER) == 422
    assert len(answered) == 2

    # handed to the FastAPI route: what the model refuses, callers, query strings, methods
    for body, headers, status in [
            ({"actor": "alice"}, SERVER, 422),                      # no type
            ({**event, "bogus": 1}, SERVER, 422),                   # an unknown field
            ({**event, "payload": [1]}, SERVER, 422),               # not an object
            ([event], SERVER, 422),                                 # not an event at all
            (event, None, 401),
            (event, {"Authorization": "Basic abc"}, 401),
            (event, {"Authorization": f"Bearer {token}"}, 403)]:
        assert _same(hot, plain, body, headers) == status, body
    assert _same(hot, plain, event, SERVER, path=PATH + "?zzz=1") == 400
    assert _same(hot, plain, None, SERVER, method="GET") == 405
    assert answered == [1, 1]


def test_the_hot_publish_stays_out_of_the_openapi_document(t: Tidings) -> None:
    hot, plain = TestClient(_app(t, hot=True)), TestClient(_app(t, hot=False))
    assert hot.get("/openapi.json").json() == plain.get("/openapi.json").json()
