"""The web inbox and <tidings-bell> in a real browser: Debian's Chromium driven by Playwright.

Screenshots go to ``test-artifacts/`` (or ``$TIDINGS_ARTIFACTS``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from backends import require
from live import LiveServer
from stores import SqliteStores
from tidings.api.app import create_app
from tidings.api.auth import Authenticator
from tidings.config import Config
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings

CHROMIUM = os.environ.get("TIDINGS_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("TIDINGS_ARTIFACTS")
                 or Path(__file__).parents[2] / "test-artifacts")
KEY = "web-test-key"
SECRET = "web-test-secret-of-thirty-two-bytes!"
TYPES = [
    EventType("page-linked", bundle="object", audience=("recipients",),
              templates=Templates(title="{{ object_title }} was linked by {{ actors_text }}")),
    EventType("mention", audience=("recipients",),
              templates=Templates(title="{{ actor }} mentioned you: {{ payload.text }}")),
    EventType("message", section="message", audience=("recipients",),
              templates=Templates(title="{{ actor }} wrote to you")),
]
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _check_chromium() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        raise FileNotFoundError(f"{CHROMIUM} is missing (scripts/test installs Debian's chromium)")
    import playwright.sync_api  # noqa: F401


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require("Chromium", _check_chromium, where=CHROMIUM, env="TIDINGS_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS,
                                             headless=True)
        yield browser
        browser.close()


class Site:
    def __init__(self, url: str, tidings: Tidings) -> None:
        self.url = url
        self.tidings = tidings
        # a generous timeout: a loaded CI box may hold a publish behind the worker's unit on
        # SQLite's one writer for seconds; these tests are about the page, not speed
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"},
                                 timeout=30)
        self.auth = Authenticator((KEY,), SECRET)
        self.contexts: list[Any] = []

    def token(self, user: str) -> str:
        return self.auth.mint(user, 3600)[0]

    def publish(self, **event: Any) -> None:
        response = self.http.post("/v1/events", json=event)
        assert response.status_code == 202, response.text


@pytest.fixture
def site(sqlite_stores: SqliteStores) -> Iterator[Site]:
    url = sqlite_stores.clone()
    tidings = Tidings(Config(database_url=url), types=TYPES)
    for event_type in TYPES:
        tidings.define_type(event_type)
    app = create_app(tidings, api_keys=(KEY,), token_secret=SECRET, run_worker=True,
                     stream_interval=0.2)
    with LiveServer(app) as server:
        site = Site(server.url, tidings)
        yield site
        for context in site.contexts:  # close the pages' streams before the server stops
            context.close()
    tidings.close()
    sqlite_stores.drop(url)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def open_inbox(browser: Any, site: Site, user: str, *, width: int = 1024) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 800})
    site.contexts.append(context)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs
    page.goto(f"{site.url}/#token={site.token(user)}")
    page.wait_for_selector("#list li, #list .empty")
    return page


def wait_until(condition: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def release(page: Any, context: Any, url: str, held: list[Any], timeout: float = 5.0) -> None:
    """Send on the requests a route held, once its handler has run.

    Playwright's sync API runs a route handler only while a call into it is in flight, so the
    wait pumps the page's events (a plain sleep would not) and the route is dropped only then:
    dropped earlier, a request not yet handed to the handler goes on unheld and nothing waits.
    """
    deadline = time.monotonic() + timeout
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, f"no request to {url} was held"
    context.unroute(url)
    for route in held:
        route.fallback()


def badge(page: Any) -> Any:
    return page.locator("tidings-bell .badge")


def test_badge_rises_live_and_flyout_shows_the_bundle(browser: Any, site: Site) -> None:
    page = open_inbox(browser, site, "bob")
    assert badge(page).is_hidden()
    for actor in ("alice", "carol", "dave"):
        site.publish(type="page-linked", actor=actor, object="page:San_Francisco",
                     recipients=["bob"])
    badge(page).filter(has_text="1").wait_for(timeout=5000)  # no reload: over SSE
    assert "1 new" in page.locator("tidings-bell .bell").get_attribute("aria-label")
    page.locator("tidings-bell .bell").click()
    item = page.locator("tidings-bell .item").first
    item.filter(has_text="and 2 others").wait_for(timeout=5000)  # the bundle grows live
    assert item.locator(".title").inner_text() == "San Francisco was linked by dave and 2 others"
    assert "unread" in item.get_attribute("class")
    badge(page).wait_for(state="hidden", timeout=5000)  # seen once opened; still unread
    shot(page, "flyout-bundle")
    item.click()  # marks it read
    page.wait_for_function("""() => !document.querySelector('tidings-bell').shadowRoot
                                     .querySelector('.item.unread')""", timeout=5000)
    assert site.tidings.unread_count("bob").count == 0


def test_mark_all_read_clears_the_badge_in_another_tab(browser: Any, site: Site) -> None:
    for n in range(3):
        site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": f"#{n}"})
    first = open_inbox(browser, site, "bob")
    second = open_inbox(browser, site, "bob")
    badge(first).filter(has_text="3").wait_for(timeout=5000)
    badge(second).filter(has_text="3").wait_for(timeout=5000)
    first.locator("tidings-bell .bell").click()
    badge(second).wait_for(state="hidden", timeout=5000)  # seen there: the other tab hears it
    second.locator("tidings-bell .bell").click()
    second.locator("tidings-bell .item.unread").first.wait_for()
    first.locator("tidings-bell .mark-all").click()
    assert wait_until(lambda: site.tidings.unread_count("bob").count == 0)
    first.locator("tidings-bell .tab .count").first.wait_for(state="hidden", timeout=5000)
    shot(second, "second-tab-after-mark-all")


def test_infinite_scroll_reaches_the_oldest(browser: Any, site: Site) -> None:
    for n in range(45):
        site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": f"n{n}"})
    site.http.get("/healthz")
    deadline_items = 45
    page = open_inbox(browser, site, "bob")
    page.wait_for_function(
        "() => document.querySelectorAll('#list li').length >= 20", timeout=10000)
    for _ in range(20):
        page.mouse.wheel(0, 5000)
        page.wait_for_timeout(150)
        if page.locator("#list li").count() >= deadline_items:
            break
    page.get_by_text("alice mentioned you: n0", exact=True).wait_for(timeout=5000)
    assert page.locator("#list li").count() == 45
    assert page.locator("#list-status").inner_text() == "That is everything."
    shot(page, "infinite-scroll-end")


def test_names_and_payloads_are_text(browser: Any, site: Site) -> None:
    evil = "<img src=x onerror=alert(1)>"
    site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": evil})
    page = open_inbox(browser, site, "bob")
    page.get_by_text(f"alice mentioned you: {evil}", exact=True).wait_for(timeout=5000)
    page.locator("tidings-bell .bell").click()
    page.locator("tidings-bell .item").first.wait_for()
    assert page.locator("img:not(.logo)").count() == 0  # the brand's logo is the one image
    assert page.locator("tidings-bell img").count() == 0
    page.wait_for_timeout(300)
    assert page.dialogs == []
    shot(page, "xss-as-text")


def test_sections_phone_width_and_keyboard(browser: Any, site: Site) -> None:
    site.publish(type="message", actor="carol", recipients=["bob"])
    site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": "hi"})
    page = open_inbox(browser, site, "bob", width=375)
    page.get_by_role("tab", name="Messages").click()
    page.get_by_text("carol wrote to you").wait_for()
    assert page.locator("#list li").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    # the bell opens from the keyboard and Escape closes it
    page.locator("tidings-bell .bell").focus()
    page.keyboard.press("Enter")
    page.locator("tidings-bell .panel").wait_for(state="visible")
    page.keyboard.press("Escape")
    page.locator("tidings-bell .panel").wait_for(state="hidden")
    assert page.locator("tidings-bell .live").get_attribute("aria-live") == "polite"
    shot(page, "phone-width-messages")


def test_preferences_page_saves(browser: Any, site: Site) -> None:
    page = open_inbox(browser, site, "bob")
    page.goto(f"{site.url}/#/preferences")
    page.locator("#email").fill("bob@example.org")
    page.locator("#frequency").select_option("daily")
    page.locator("#muted-actors").fill("spammer")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved.").wait_for()
    prefs = site.tidings.get_preferences("bob")
    assert prefs["email"]["address"] == "bob@example.org"
    assert prefs["email"]["frequency"] == "daily"
    assert prefs["muted"]["actors"] == ["spammer"]
    shot(page, "preferences")
