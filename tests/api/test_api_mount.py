"""tidings mounted under a prefix of another FastAPI application (docs/mount.md), over real
HTTP: every route, the OpenAPI document, the docs pages, the web inbox's files, the event
stream and the Python client work under ``/notifications``; the host's sign-in (a cookie
read by its own dependency) is the user; the server key stays the server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request

from engines import TYPES
from servers import SERVER_KEY, TOKEN_SECRET, LiveServer, serve, wait_for
from stores import SqlStores
from tidings.client import ApiError, Client

pytest_plugins = ["servers"]
ON_SQLITE = pytest.mark.parametrize("api_backend", ["sqlite"])  # the HTTP layer is the point

PREFIX = "/notifications"


def current_user(request: Request) -> str | None:
    """The host application's sign-in, as its own dependency: who the session cookie names."""
    return request.cookies.get("site_user")


def host(tidings_app: FastAPI) -> FastAPI:
    """The host application of docs/mount.md: its own pages, tidings under a prefix, and
    tidings' lifespan (its job worker) run by the host's."""
    app = FastAPI(lifespan=tidings_app.router.lifespan_context)

    @app.get("/")
    async def home() -> dict[str, str]:
        return {"site": "the host's own page"}

    app.mount(PREFIX, tidings_app)
    return app


@pytest.fixture
def site(start_server: Callable[..., LiveServer]) -> LiveServer:
    return start_server(host=host, user_resolver=current_user)


def browser_of(site: LiveServer, user: str | None = None, **headers: str) -> httpx.Client:
    """A client of the host site, signed in as ``user`` through the host's own cookie."""
    cookies = {"site_user": user} if user else {}
    return httpx.Client(base_url=site.base_url, cookies=cookies, headers=headers, timeout=10)


@ON_SQLITE
def test_every_part_of_tidings_is_served_under_the_prefix(site: LiveServer) -> None:
    with browser_of(site) as http:
        assert http.get("/").json() == {"site": "the host's own page"}
        assert http.get(f"{PREFIX}/healthz").status_code == 200
        assert http.get(f"{PREFIX}/readyz").status_code == 200
        document = http.get(f"{PREFIX}/openapi.json").json()
        assert document["servers"] == [{"url": PREFIX}]
        assert "/v1/users/{user}/notifications" in document["paths"]  # paths under servers
        for page, asset in (("docs", "swagger-ui-bundle.js"), ("redoc", "redoc.standalone.js")):
            html = http.get(f"{PREFIX}/{page}").text
            assert f'"{PREFIX}/openapi.json"' in html or f"'{PREFIX}/openapi.json'" in html
            assert f"{PREFIX}/docs/assets/{asset}" in html
            assert http.get(f"{PREFIX}/docs/assets/{asset}").status_code == 200
        inbox = http.get(f"{PREFIX}/")
        assert inbox.status_code == 200 and 'src="static/app.js"' in inbox.text
        assert '="/' not in inbox.text  # nothing of the page points at the host's root
        for asset in ("static/app.js", "static/session.js", "static/tidings.css",
                      "tidings-bell.js"):
            assert http.get(f"{PREFIX}/{asset}").status_code == 200, asset
        missing = http.get(f"{PREFIX}/v1/nothing-here")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        page = http.get(f"{PREFIX}/nothing-here")
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
        assert f'href="{PREFIX}/static/tidings.css"' in page.text
        assert f'href="{PREFIX}/"' in page.text and 'href="/static' not in page.text
        # the one-click unsubscribe posts a form, not JSON, under the prefix too
        form = http.post(f"{PREFIX}/v1/unsubscribe/bob.0123abcd",
                         data={"List-Unsubscribe": "One-Click"})
        assert form.status_code == 404, form.text
        lost = http.get(f"{PREFIX}/static/missing.css")  # 404 of the static files, likewise
        assert lost.status_code == 404 and f'href="{PREFIX}/"' in lost.text


@ON_SQLITE
def test_the_python_client_and_the_worker_work_through_the_mount(site: LiveServer) -> None:
    with Client(f"{site.base_url}{PREFIX}", SERVER_KEY) as server:
        server.publish("mention", actor="alice", recipients=["bob"], object="page:Fog")
        assert wait_for(lambda: server.unread_count(user="bob")["count"] == 1)
        token = server.mint_token("bob")["token"]
    with Client(f"{site.base_url}{PREFIX}", token) as bob:  # tidings' own tokens still work
        assert [i["actor"] for i in bob.notifications()["items"]] == ["alice"]


@ON_SQLITE
def test_the_hosts_sign_in_is_the_user(site: LiveServer) -> None:
    with Client(f"{site.base_url}{PREFIX}", SERVER_KEY) as server:
        server.publish("mention", actor="alice", recipients=["bob"], object="page:Fog")
        assert wait_for(lambda: server.unread_count(user="bob")["count"] == 1)
    with browser_of(site, "bob") as bob:
        items = bob.get(f"{PREFIX}/v1/me/notifications").json()["items"]
        assert [i["actor"] for i in items] == ["alice"]
        count = bob.get(f"{PREFIX}/v1/users/bob/notifications/unread-count")
        assert count.json()["count"] == 1  # the plain count, too, asks the host
        assert bob.get(f"{PREFIX}/v1/users/bob/notifications").status_code == 200
        other = bob.get(f"{PREFIX}/v1/users/alice/notifications")
        assert other.status_code == 403
        refused = bob.post(f"{PREFIX}/v1/events", json={"type": "mention", "recipients": ["bob"]})
        assert refused.status_code == 403, refused.text  # publishing needs the server key
        in_url = bob.get(f"{PREFIX}/v1/me/notifications", params={"access_token": "x"})
        assert in_url.status_code == 400
        read = bob.post(f"{PREFIX}/v1/me/notifications/read", json={"all": True})
        assert read.json() == {"updated": 1}
    with browser_of(site) as stranger:
        assert stranger.get(f"{PREFIX}/v1/me/notifications").status_code == 401
    with browser_of(site, "bob", authorization=f"Bearer {SERVER_KEY}") as backend:
        # the server key is the server, whoever the cookie names
        assert backend.get(f"{PREFIX}/v1/users/alice/notifications").status_code == 200
    with browser_of(site, "not a user id!") as odd:
        answer = odd.get(f"{PREFIX}/v1/me/notifications")
        assert answer.status_code == 401 and "user id" in answer.json()["error"]["message"]


@ON_SQLITE
def test_the_event_stream_under_the_prefix_follows_the_hosts_user(site: LiveServer) -> None:
    events: list[tuple[str, Any]] = []
    with browser_of(site, "bob") as bob, bob.stream(
            "GET", f"{PREFIX}/v1/me/stream", headers={"Accept": "text/event-stream"}) as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()
        name = ""
        for line in lines:
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                events.append((name, line[len("data: "):]))
                if name == "unread" and len(events) == 1:
                    with Client(f"{site.base_url}{PREFIX}", SERVER_KEY) as server:
                        server.publish("mention", actor="alice", recipients=["bob"])
                if name == "notification":
                    break
    assert events[0][0] == "unread" and '"count":0' in events[0][1].replace(" ", "")
    assert events[-1][0] == "notification" and "alice" in events[-1][1]


@ON_SQLITE
def test_a_user_the_host_does_not_know_gets_no_one_elses_data(site: LiveServer) -> None:
    with Client(f"{site.base_url}{PREFIX}", None) as anonymous, \
            pytest.raises(ApiError) as refused:
        anonymous.notifications()
    assert refused.value.status == 401


MOUNT_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "mount.md"


def test_the_guides_example_runs_as_written(sqlite_stores: SqlStores,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    guide = MOUNT_GUIDE.read_text(encoding="utf-8")
    section = guide.split("## Mounted in a FastAPI or Starlette application", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    url = sqlite_stores.clone()
    for name, value in {"TIDINGS_DATABASE_URL": url, "TIDINGS_API_KEY": SERVER_KEY,
                        "TIDINGS_TOKEN_SECRET": TOKEN_SECRET,
                        "SITE_SECRET": "the site's own secret"}.items():
        monkeypatch.setenv(name, value)
    scope: dict[str, Any] = {}
    exec(compile(example, str(MOUNT_GUIDE), "exec"), scope)  # the guide's own code
    app, engine = scope["app"], scope["engine"]
    engine.define_type(TYPES[0])

    @app.get("/login/{user}")  # the site's own sign-in, which the guide leaves to the site
    async def login(user: str, request: Request) -> dict[str, str]:
        request.session["user_id"] = user
        return {"signed_in": user}

    try:
        with serve(app) as base, httpx.Client(base_url=base, timeout=10) as browser:
            assert browser.get("/notifications/v1/me/notifications").status_code == 401
            assert browser.get("/login/bob").status_code == 200  # the session cookie
            with Client(f"{base}{PREFIX}", SERVER_KEY) as server:
                server.publish(TYPES[0].name, actor="alice", recipients=["bob"],
                               object="page:Fog")
            assert wait_for(lambda: browser.get(
                "/notifications/v1/me/notifications/unread-count").json()["count"] == 1)
            items = browser.get("/notifications/v1/me/notifications").json()["items"]
            assert [item["actor"] for item in items] == ["alice"]
    finally:
        engine.close()
        sqlite_stores.drop(url)
