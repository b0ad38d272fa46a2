"""The web inbox and its bell, served by tidings mounted under ``/notifications`` of another
FastAPI application (docs/mount.md), in a real Chromium: the page, its scripts and styles,
the API calls and the live stream all stay under the prefix, and the inbox works."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from live import LiveServer
from stores import SqliteStores
from test_web import KEY, SECRET, TYPES, Site, browser  # noqa: F401  (fixtures)
from tidings.api.app import create_app
from tidings.config import Config
from tidings.engine import Tidings

PREFIX = "/notifications"


@pytest.fixture
def mounted(sqlite_stores: SqliteStores) -> Iterator[Site]:
    """A host application with tidings under the prefix; the Site's URL is the prefix's."""
    tidings = Tidings(Config(database_url=sqlite_stores.clone()), types=TYPES)
    for event_type in TYPES:
        tidings.define_type(event_type)
    inner = create_app(tidings, api_keys=(KEY,), token_secret=SECRET, run_worker=True,
                       stream_interval=0.1)
    host = FastAPI(lifespan=inner.router.lifespan_context)

    @host.get("/")
    async def home() -> dict[str, str]:
        return {"site": "host"}

    host.mount(PREFIX, inner)
    with LiveServer(host) as server:
        site = Site(server.url + PREFIX, tidings)
        yield site
        for context in site.contexts:
            context.close()
    tidings.close()


def test_the_inbox_works_under_the_prefix(browser: Any, mounted: Site) -> None:
    mounted.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": "hi"})
    context = browser.new_context()
    mounted.contexts.append(context)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    failed: list[str] = []
    page.on("response", lambda response: failed.append(response.url)
            if response.status >= 400 else None)
    page.goto(f"{mounted.url}/#token={mounted.token('bob')}")
    page.locator("#list li", has_text="alice mentioned you: hi").wait_for()
    page.locator("tidings-bell .badge").filter(has_text="1").wait_for()
    mounted.publish(type="message", actor="carol", recipients=["bob"])
    page.locator("tidings-bell .badge").filter(has_text="2").wait_for(timeout=5000)  # live
    page.get_by_role("link", name="Preferences").click()
    page.get_by_role("heading", name="Preferences").wait_for()
    origin = mounted.url[: -len(PREFIX)]
    assert all(url.startswith(f"{mounted.url}/") for url in requests), requests
    assert any(url.startswith(f"{mounted.url}/v1/me/stream?") for url in requests)
    assert any(url == f"{mounted.url}/static/app.js" for url in requests)
    assert not [url for url in requests if url.startswith(f"{origin}/v1/")]
    assert failed == [] and errors == []
