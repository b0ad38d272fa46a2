"""<tidings-bell> on a page of another site (another origin: another port), in a real
Chromium: the links and avatars a notification gives as paths, the API and the stream
resolve against the tidings server the bell was given; ``tidings-token-expiring`` lets the
page hand a new token and the bell carries on with it; ``TIDINGS_CORS_ORIGINS`` keeps the
API to the sites it names."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from live import LiveServer, free_port
from stores import SqliteStores
from test_web import KEY, SECRET, TYPES, browser, wait_until  # noqa: F401  (fixtures)
from tidings.api.app import create_app
from tidings.api.auth import Authenticator
from tidings.config import Config
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.exceptions import ConfigError

LINKED = EventType("linked", audience=("recipients",),
                   templates=Templates(title="{{ actor }} linked {{ payload.page }}",
                                       link="{{ payload.path }}"))
AUTH = Authenticator((KEY,), SECRET)

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>host</title></head>
<body><header><tidings-bell server="{server}" token="{token}" expiry-notice="{notice}">
</tidings-bell></header><ol id="log"></ol>
<script src="{server}/tidings-bell.js"></script>
<script>
  const bell = document.querySelector("tidings-bell");
  const say = (text) => document.getElementById("log").append(
    Object.assign(document.createElement("li"), {{ textContent: text }}));
  bell.addEventListener("tidings-count", (e) => say(`count ${{e.detail.count}}`));
  bell.addEventListener("tidings-open", (e) => e.preventDefault());
  bell.addEventListener("tidings-token-expiring", async (e) => {{
    say(`expiring ${{e.detail.expires_in}}`);
    const answer = await fetch("/bell-token", {{ method: "POST" }});
    bell.token = (await answer.json()).token;
    say("renewed");
  }});
</script></body></html>"""


class TidingsServer:
    """A tidings server for these tests: its URL, engine and a publisher."""

    def __init__(self, url: str, tidings: Tidings) -> None:
        self.url = url
        self.tidings = tidings

    def publish(self, **event: Any) -> None:
        answer = httpx.post(f"{self.url}/v1/events", json=event,
                            headers={"Authorization": f"Bearer {KEY}"})
        assert answer.status_code == 202, answer.text


@pytest.fixture
def start_tidings(sqlite_stores: SqliteStores) -> Iterator[Callable[..., TidingsServer]]:
    """Start tidings (its Config's fields as keywords) on a port of its own."""
    running: list[tuple[LiveServer, Tidings]] = []

    def start(**config: Any) -> TidingsServer:
        tidings = Tidings(Config(database_url=sqlite_stores.clone(), **config),
                          types=[*TYPES, LINKED])
        for event_type in (*TYPES, LINKED):
            tidings.define_type(event_type)
        app = create_app(tidings, api_keys=(KEY,), token_secret=SECRET, run_worker=True,
                         stream_interval=0.1)
        server = LiveServer(app).__enter__()
        running.append((server, tidings))
        return TidingsServer(server.url, tidings)

    yield start
    for server, tidings in reversed(running):
        server.__exit__(None, None, None)
        tidings.close()


def host_site(server: str, user: str, *, ttl: int = 3600, notice: int = 60,
              port: int | None = None) -> LiveServer:
    """A site of its own, on another port: the page with the bell, and ``/bell-token`` (the
    site's backend minting the signed-in user a fresh token)."""
    async def page(_request: Request) -> HTMLResponse:
        token = AUTH.mint(user, ttl)[0]
        return HTMLResponse(PAGE.format(server=server, token=token, notice=notice))

    async def bell_token(_request: Request) -> JSONResponse:
        return JSONResponse({"token": AUTH.mint(user, 3600)[0]})

    app = Starlette(routes=[Route("/", page), Route("/bell-token", bell_token,
                                                     methods=["POST"])])
    return LiveServer(app, port=port)


def open_page(browser: Any, url: str, contexts: list[Any]) -> tuple[Any, list[str], list[str]]:
    context = browser.new_context()
    contexts.append(context)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    return page, errors, requests


@pytest.fixture
def contexts() -> Iterator[list[Any]]:
    opened: list[Any] = []
    yield opened
    for context in opened:  # the pages' streams close before the servers stop
        context.close()


def test_links_avatars_and_the_stream_resolve_against_the_tidings_server(
        browser: Any, start_tidings: Callable[..., TidingsServer], contexts: list[Any]) -> None:
    site = start_tidings()
    with host_site(site.url, "bob") as host:
        assert host.url != site.url
        page, errors, requests = open_page(browser, host.url, contexts)
        page.locator("#log li", has_text="count 0").first.wait_for()
        site.publish(type="linked", actor="alice", recipients=["bob"],
                     payload={"page": "Fog", "path": "/wiki/Fog",
                              "avatar_url": "/static/favicon.svg"})
        page.locator("tidings-bell .badge").filter(has_text="1").wait_for(timeout=5000)
        page.locator("tidings-bell .bell").click()
        item = page.locator("tidings-bell a.item", has_text="alice linked Fog")
        item.wait_for()
        assert item.get_attribute("href") == f"{site.url}/wiki/Fog"  # not the host's
        avatar = item.locator("img.face")
        assert avatar.get_attribute("src") == f"{site.url}/static/favicon.svg"
        assert wait_until(lambda: avatar.evaluate("img => img.complete && img.naturalWidth > 0"))
        stream = [url for url in requests if "/v1/me/stream" in url]
        assert len(stream) == 1 and stream[0].startswith(f"{site.url}/v1/me/stream?")
        assert not [url for url in requests if url.startswith(host.url + "/v1")]
        assert errors == []


def test_the_page_hands_a_new_token_before_the_old_one_expires(
        browser: Any, start_tidings: Callable[..., TidingsServer], contexts: list[Any]) -> None:
    site = start_tidings()
    with host_site(site.url, "bob", ttl=6, notice=60) as host:
        page, errors, requests = open_page(browser, host.url, contexts)
        started = time.monotonic()
        page.locator("#log li", has_text="count 0").first.wait_for()
        page.locator("#log li", has_text="renewed").wait_for(timeout=8000)
        # less than twice the notice left: told half-way (about 3 s left), neither at once
        # (about 6) nor at the end (0)
        expiring = page.locator("#log li", has_text="expiring").first.inner_text()
        assert 1 <= int(expiring.split()[1]) <= 4, expiring
        time.sleep(max(0.0, started + 7.0 - time.monotonic()))  # the first token is dead now
        site.publish(type="mention", actor="alice", recipients=["bob"],
                     payload={"text": "after the renewal"})
        page.locator("tidings-bell .badge").filter(has_text="1").wait_for(timeout=5000)
        page.locator("tidings-bell .bell").click()
        page.locator("tidings-bell .item", has_text="after the renewal").wait_for()
        streams = [url for url in requests if "/v1/me/stream" in url]
        assert len(streams) == 2 and streams[0] != streams[1]  # reconnected with the new token
        assert page.locator("#log li", has_text="expiring").count() == 1  # the new one: 1 h
        assert errors == []


def test_cors_origins_keep_the_api_to_the_sites_named(
        browser: Any, start_tidings: Callable[..., TidingsServer], contexts: list[Any]) -> None:
    allowed_port = free_port()
    allowed = f"http://127.0.0.1:{allowed_port}"
    site = start_tidings(cors_origins=(allowed,))
    with host_site(site.url, "bob", port=allowed_port) as host, \
            host_site(site.url, "bob") as elsewhere:
        assert host.url == allowed
        page, errors, _ = open_page(browser, host.url, contexts)
        page.locator("#log li", has_text="count 0").first.wait_for()
        site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": "hi"})
        page.locator("tidings-bell .badge").filter(has_text="1").wait_for(timeout=5000)
        assert errors == []

        other, _, _ = open_page(browser, elsewhere.url, contexts)
        refused = other.evaluate("""async ([server, token]) => {
            try {
              await fetch(`${server}/v1/me/notifications/unread-count`,
                          { headers: { Authorization: `Bearer ${token}` } });
              return "answered";
            } catch (error) { return "refused"; }
          }""", [site.url, AUTH.mint("bob", 60)[0]])
        assert refused == "refused"
        assert other.locator("tidings-bell .badge").is_hidden()
    preflight = {"Origin": allowed, "Access-Control-Request-Method": "GET",
                 "Access-Control-Request-Headers": "authorization"}
    answer = httpx.options(f"{site.url}/v1/me/notifications", headers=preflight)
    assert answer.headers["access-control-allow-origin"] == allowed
    answer = httpx.options(f"{site.url}/v1/me/notifications",
                           headers={**preflight, "Origin": "http://127.0.0.1:1"})
    assert "access-control-allow-origin" not in answer.headers


def test_the_cors_setting_is_read_and_checked() -> None:
    assert Config.from_env({}).cors_origins == ("*",)  # as before the setting existed
    assert Config.from_env({"TIDINGS_CORS_ORIGINS": "*"}).cors_origins == ("*",)
    config = Config.from_env({"TIDINGS_CORS_ORIGINS": "https://www.example.org, "
                                                      "http://127.0.0.1:8080"})
    assert config.cors_origins == ("https://www.example.org", "http://127.0.0.1:8080")
    for bad in ("www.example.org", "https://www.example.org/page", "*, https://a.example"):
        with pytest.raises(ConfigError, match="TIDINGS_CORS_ORIGINS"):
            Config.from_env({"TIDINGS_CORS_ORIGINS": bad})
