"""``docs/embed.html`` — the plain page a site owner copies — served from another origin than
tidings, in a real Chromium: the bell counts live across origins, its flyout lies inside the
viewport, its label attributes show, and the page hears every event it fires."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from live import LiveServer
from test_web import ARTIFACTS, Site, browser, site, wait_until  # noqa: F401  (fixtures)

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "embed.html"


@pytest.fixture
def host_page(site: Site) -> Iterator[str]:
    """The example page, with its placeholders filled in, on a server of its own."""
    html = EXAMPLE.read_text(encoding="utf-8")
    assert html.count("https://tidings.example.org") == 4 and "USER_TOKEN" in html
    html = html.replace("https://tidings.example.org", site.url).replace(
        "USER_TOKEN", site.token("bob"))

    async def page(_request: Any) -> HTMLResponse:
        return HTMLResponse(html)

    with LiveServer(Starlette(routes=[Route("/", page)])) as server:
        yield server.url


def log(page: Any) -> list[str]:
    return list(page.locator("#log li").all_inner_texts())


@pytest.mark.parametrize("width", [390, 1280])
def test_the_example_page_embeds_the_bell_and_hears_its_events(
        browser: Any, site: Site, host_page: str, width: int) -> None:
    assert host_page.split(":")[-1] != site.url.split(":")[-1]  # another origin
    context = browser.new_context(viewport={"width": width, "height": 700})
    site.contexts.append(context)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    streams: list[str] = []
    page.on("request", lambda request: streams.append(request.url)
            if "/v1/me/stream" in request.url else None)
    page.goto(host_page)
    page.locator("#log li", has_text="tidings-count: 0 new").first.wait_for()

    site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": "hi"})
    site.publish(type="message", actor="carol", recipients=["bob"])
    page.locator("tidings-bell .badge").filter(has_text="2").wait_for(timeout=5000)
    page.locator("#log li", has_text="tidings-count: 2 new, 2 unread").wait_for()
    counts = [line for line in log(page) if line.startswith("tidings-count")]
    assert len(counts) == len(set(counts)), counts  # told when the count changes, once
    assert len(streams) == 1, streams  # one live stream per bell

    page.locator("tidings-bell .bell").click()
    panel = page.locator("tidings-bell .panel")
    panel.wait_for()
    page.locator("#log li", has_text="tidings-toggle: opened").wait_for()
    assert page.locator("tidings-bell h2").inner_text() == "Inbox"  # label-title
    assert page.locator("tidings-bell .foot").inner_text() == "Open the inbox"
    box = panel.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    bell = page.locator("tidings-bell .bell").bounding_box()
    assert abs(box["x"] - bell["x"]) < 12 or box["x"] == 8  # position="left": opens rightwards
    item = page.locator("tidings-bell .item", has_text="alice mentioned you: hi")
    item.wait_for()
    page.locator("#log li", has_text="tidings-count: 0 new, 2 unread").wait_for()  # seen
    page.screenshot(path=str(ARTIFACTS / f"embed-{width}.png"))

    page.locator("tidings-bell .row", has_text="alice mentioned you").locator(".mark").click()
    page.locator("#log li", has_text="tidings-read:").wait_for()
    assert any(line.startswith("tidings-read: ") and line.endswith(" read")
               for line in log(page))
    item.click()  # no link: the page is told, nothing is followed
    page.locator("#log li", has_text="tidings-open: alice mentioned you: hi").wait_for()
    page.keyboard.press("Escape")
    page.locator("#log li", has_text="tidings-toggle: closed").wait_for()
    assert page.url.rstrip("/") == host_page.rstrip("/")
    assert wait_until(lambda: site.tidings.unread_count("bob").count == 1)
    assert errors == []
