"""The plain badge count and first page are answered by :mod:`tidings.api.hotreads`, ahead of
FastAPI's routes, with exactly what those routes answer (body, status, headers): the same
request sent to an app without the hot reads gets the same answer, errors included; every
other form of the request still reaches the FastAPI route and its validation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tidings.api import hotreads
from tidings.api.app import create_app
from tidings.engine import Tidings

KEY = "k" * 32
SECRET = "s" * 32
SERVER = {"Authorization": f"Bearer {KEY}"}


def _app(t: Tidings, *, hot: bool) -> Any:
    app = create_app(t, api_keys=(KEY,), token_secret=SECRET)
    if not hot:
        app.router.routes[:] = [r for r in app.router.routes
                                if not isinstance(r, hotreads.HotRead)]
    return app


@pytest.fixture
def engine(t: Tidings) -> Tidings:
    t.subscribe("bob", "page-linked", "page:Rome")
    for actor in ("alice", "carol", "dave"):
        t.publish({"type": "page-linked", "actor": actor, "object": "page:Rome"})
    for n in range(3):
        t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"],
                   "object": f"page:{n}"})
    t.run_jobs()
    t.mark_seen("bob")
    t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"]})
    t.run_jobs()
    return t


@pytest.fixture
def apps(engine: Tidings) -> Iterator[tuple[TestClient, TestClient]]:
    with TestClient(_app(engine, hot=True)) as hot, \
            TestClient(_app(engine, hot=False)) as plain:
        yield hot, plain


def _same(hot: TestClient, plain: TestClient, path: str,
          headers: dict[str, str] | None = None, method: str = "GET") -> int:
    ours = hot.request(method, path, headers=headers)
    theirs = plain.request(method, path, headers=headers)
    assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), path

    def kept(response: Any) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in response.headers.items() if k != "x-request-id")

    assert kept(ours) == kept(theirs), path
    assert ours.headers["x-request-id"]
    return ours.status_code


def test_the_hot_reads_answer_as_the_fastapi_routes_do(
        engine: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = TestClient(_app(engine, hot=False))
    token = plain.post("/v1/tokens", json={"user": "bob"}, headers=SERVER).json()["token"]
    bob = {"Authorization": f"Bearer {token}"}
    answered: list[str] = []
    for name in ("unread_count", "first_page"):
        real = getattr(hotreads, name)

        async def counted(*args: Any, real: Any = real, name: str = name) -> Any:
            answered.append(name)
            return await real(*args)

        monkeypatch.setattr(hotreads, name, counted)
    hot = TestClient(_app(engine, hot=True))
    count = "/v1/users/bob/notifications/unread-count"
    page = "/v1/users/bob/notifications"
    assert _same(hot, plain, count, SERVER) == 200
    assert hot.get(count, headers=SERVER).json() == {
        "count": 5, "display": "5", "unseen": 1, "unseen_display": "1"}
    assert _same(hot, plain, count, bob) == 200
    assert _same(hot, plain, page, SERVER) == 200
    assert _same(hot, plain, page + "?limit=1", SERVER) == 200
    assert _same(hot, plain, page + "?limit=100", SERVER) == 200
    assert _same(hot, plain, "/v1/users/nobody/notifications", SERVER) == 200
    assert _same(hot, plain, count) == 401
    assert _same(hot, plain, page, {"Authorization": "Basic abc"}) == 401
    assert _same(hot, plain, "/v1/users/carol/notifications/unread-count", bob) == 403
    assert _same(hot, plain, "/v1/users/carol/notifications", bob) == 403
    assert len(answered) == 11  # every one of them answered by a hot read
    answered.clear()
    # every other form goes to the FastAPI route: its validation, its errors
    for path, status in [(count + "?types=mention", 200), (count + "?zzz=1", 400),
                         (page + "?limit=0", 422), (page + "?limit=101", 422),
                         (page + "?limit=2&unread=true", 200), (page + "?limit=02", 200),
                         ("/v1/users/bad%20user/notifications", 422),
                         (page + "?access_token=" + token, 400)]:
        assert _same(hot, plain, path, SERVER) == status, path
    assert _same(hot, plain, count, SERVER, method="POST") == 405
    assert _same(hot, plain, page, SERVER, method="HEAD") == 405
    assert answered == []


def test_the_hot_reads_stay_out_of_the_openapi_document(
        apps: tuple[TestClient, TestClient]) -> None:
    hot, plain = apps
    assert hot.get("/openapi.json").json() == plain.get("/openapi.json").json()


def test_a_page_put_together_from_kept_items_follows_changes_and_falls_back(
        engine: Tidings, apps: tuple[TestClient, TestClient],
        monkeypatch: pytest.MonkeyPatch) -> None:
    hot, plain = apps
    page = "/v1/users/bob/notifications"
    first = hot.get(page, headers=SERVER).content
    assert _same(hot, plain, page, SERVER) == 200  # again: from the kept items' JSON
    assert hot.get(page, headers=SERVER).content == first
    engine.mark_all_read("bob")  # every item's read state changes
    assert _same(hot, plain, page, SERVER) == 200
    assert hot.get(page, headers=SERVER).json()["items"][0]["read"] is True
    engine.publish({"type": "page-linked", "actor": "frank", "object": "page:Rome"})
    engine.run_jobs()  # a new group on top
    assert _same(hot, plain, page + "?limit=2", SERVER) == 200
    assert hot.get(page, headers=SERVER).json()["items"][0]["actor"] == "frank"

    def refuse(item: Any) -> bytes:
        raise ValueError("only the fallback encoder writes this one")

    monkeypatch.setattr(hotreads, "item_json", refuse)  # the page goes through dumps()
    engine.mark_seen("bob")
    assert _same(hot, plain, page, SERVER) == 200
