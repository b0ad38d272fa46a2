"""The demo's wiki: every link a demo notification carries leads to an HTML page (the demo
serves a tiny page per title, its talk page and each user's pages); a page embeds the bell and
a "Watch" button that subscribes the signed-in user through the HTTP API. In a real Chromium."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from live import LiveServer
from test_web import ARTIFACTS, browser  # noqa: F401  (fixture)
from tidings.demo import PAGES, USERS, VIEWERS, events
from tidings.demo.run import demo_app, open_world
from tidings.engine import Tidings

KEYS = {"api_key": "demo-wiki-test-key", "token_secret": "demo-wiki-test-secret-0123456789abcdef"}


class Demo:
    def __init__(self, url: str, tidings: Tidings, tokens: dict[str, str]) -> None:
        self.url = url
        self.tidings = tidings
        self.tokens = tokens
        self.http = httpx.Client(base_url=url, timeout=10)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    tidings = open_world(tmp_path)
    tokens, app = demo_app(tidings, KEYS)
    with LiveServer(app) as server:
        yield Demo(server.url, tidings, dict(tokens))
    tidings.close()


def watched(demo: Demo, user: str) -> set[str]:
    return {s.object for s in demo.tidings.subscriptions(user, limit=100).items if s.type == "*"}


def test_every_link_of_a_demo_notification_leads_to_a_page(demo: Demo) -> None:
    for event in itertools.islice(events(random.Random(5)), 200):
        demo.tidings.publish(event)
    demo.tidings.run_jobs()
    links = {item.link for user in VIEWERS
             for item in demo.tidings.notifications(user, limit=100).items}
    assert None not in links, "every demo type carries a link"
    assert {link.split(":")[0] for link in links} >= {"/wiki/User_talk", "/wiki/Fog"}
    for link in sorted(links):
        answer = demo.http.get(link)
        assert answer.status_code == 200, link
        assert answer.headers["content-type"].startswith("text/html")
        assert "<tidings-bell" in answer.text and 'id="watch"' in answer.text


def test_wiki_pages_talk_pages_avatars_and_what_is_not_there(demo: Demo) -> None:
    fog = demo.http.get("/wiki/Fog")
    assert fog.status_code == 200 and "<h1>Fog</h1>" in fog.text
    assert 'href="/wiki/Talk:Fog"' in fog.text and 'data-object="page:Fog"' in fog.text
    talk = demo.http.get("/wiki/Talk:Fog")
    assert talk.status_code == 200 and "<h1>Talk:Fog</h1>" in talk.text
    assert 'data-object="page:Fog"' in talk.text  # watching the talk page watches the article
    user_talk = demo.http.get("/wiki/User_talk:bob")
    assert user_talk.status_code == 200 and 'data-object="page:User_talk:bob"' in user_talk.text
    assert "<script>" not in fog.text and "script-src 'self'" in fog.headers[
        "content-security-policy"]
    for missing in ("/wiki/Nowhere", "/wiki/Talk:Nowhere", "/wiki/User:mallory",
                    "/demo/avatars/mallory.svg"):
        answer = demo.http.get(missing)
        assert answer.status_code == 404, missing
        assert "Page not found" in answer.text, missing
    face = demo.http.get("/demo/avatars/alice.svg")
    assert face.status_code == 200 and face.headers["content-type"].startswith("image/svg+xml")
    assert demo.http.get("/v1/nothing").json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("width", [1280, 390])
def test_a_notification_leads_to_its_page_where_watch_subscribes(browser: Any, demo: Demo,
                                                                 width: int) -> None:
    context = browser.new_context(viewport={"width": width, "height": 800})
    try:
        page = context.new_page()
        name = next(p for p in PAGES if f"page:{p}" not in watched(demo, "bob"))
        title = name.replace("_", " ")
        demo.tidings.publish({"type": "mention", "actor": "alice", "object": f"page:{name}",
                              "recipients": ["bob"],
                              "payload": {"avatar_url": "/demo/avatars/alice.svg"}})
        demo.tidings.run_jobs()
        page.goto(f"{demo.url}/#token={demo.tokens['bob']}")
        row = page.locator("#list li", has_text=f"alice mentioned you on {title}")
        row.wait_for()
        assert row.locator("img.face").get_attribute("src") == "/demo/avatars/alice.svg"
        with page.expect_navigation():
            row.get_by_role("link").click()
        assert page.url == f"{demo.url}/wiki/{name}"
        assert page.locator("h1").inner_text() == title
        page.locator("tidings-bell .bell").wait_for()  # the signed-in user's bell, embedded

        watch = page.get_by_role("button", name="Watch")
        watch.click()
        page.locator("#watch[aria-pressed='true']").wait_for()
        assert f"page:{name}" in watched(demo, "bob")
        page.get_by_role("status").filter(has_text=f"You watch {title}").wait_for()
        page.screenshot(path=str(ARTIFACTS / f"demo-wiki-watching-{width}.png"), full_page=True)
        page.reload()
        page.locator("#watch[aria-pressed='true']").wait_for()  # it is read back
        page.locator("#watch").click()
        page.locator("#watch[aria-pressed='false']").wait_for()
        assert f"page:{name}" not in watched(demo, "bob")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()


def test_signed_out_the_page_asks_to_sign_in(browser: Any, demo: Demo) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 700})
    try:
        page = context.new_page()
        page.goto(f"{demo.url}/wiki/Golden_Gate_Bridge")
        page.get_by_role("link", name="Sign in to watch").wait_for()
        assert page.locator("#watch").is_hidden()
        assert page.locator("tidings-bell").is_hidden()
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_demo_from_its_sign_in_list_to_a_page_through_the_bell(browser: Any, demo: Demo,
                                                                   width: int) -> None:
    for event in itertools.islice(events(random.Random(11)), 80):
        demo.tidings.publish(event)
    demo.tidings.run_jobs()
    context = browser.new_context(viewport={"width": width, "height": 800})
    try:
        page = context.new_page()
        page.goto(demo.url)
        page.get_by_role("link", name="Sign in as bob").click()
        page.locator("#list li").nth(2).wait_for()
        page.locator("tidings-bell .bell").click()
        first = page.locator("tidings-bell .item").first
        first.wait_for()
        page.locator("tidings-bell .item img.face").first.wait_for()  # the actors' avatars
        page.screenshot(path=str(ARTIFACTS / f"demo-flyout-{width}.png"))
        # a long list scrolls inside the flyout; "See all notifications" stays at its foot
        panel = page.locator("tidings-bell .panel").bounding_box()
        foot = page.locator("tidings-bell .foot").bounding_box()
        assert abs((foot["y"] + foot["height"]) - (panel["y"] + panel["height"])) <= 2
        assert panel["y"] + panel["height"] <= 800
        assert page.evaluate("""() => { const body = document.querySelector('tidings-bell')
            .shadowRoot.querySelector('.body'); return body.scrollHeight > body.clientHeight; }""")
        with page.expect_navigation():
            first.click()
        assert "/wiki/" in page.url
        assert page.locator("h1").is_visible() and "Page not found" not in page.content()
    finally:
        context.close()


def test_the_viewers_follow_one_another_and_their_following_pages_fill(demo: Demo) -> None:
    for viewer in VIEWERS:
        followed = {f.user for f in demo.tidings.following(viewer, limit=100).items}
        assert followed >= set(VIEWERS) - {viewer}
    for event in itertools.islice(events(random.Random(3)), 60):  # the demo's first burst
        demo.tidings.publish(event)
    demo.tidings.run_jobs()
    for viewer in VIEWERS:
        followed = {f.user for f in demo.tidings.following(viewer, limit=100).items}
        timeline = demo.tidings.timeline(viewer, limit=100).items
        assert timeline, f"{viewer}'s Following page is empty"
        assert {entry.actor for entry in timeline} <= followed


def test_a_users_page_has_a_follow_button_that_fills_the_following_page(
        browser: Any, demo: Demo) -> None:
    stranger = next(u for u in USERS if u != "bob" and u not in following(demo, "bob"))
    context = browser.new_context(viewport={"width": 390, "height": 800})
    try:
        page = context.new_page()
        page.goto(f"{demo.url}/#token={demo.tokens['bob']}")
        page.locator("#list li, #list .empty").first.wait_for()
        page.goto(f"{demo.url}/wiki/User:{stranger}")
        page.get_by_role("button", name="+ Follow").click()
        page.locator("#follow[aria-pressed='true']").wait_for()
        assert stranger in following(demo, "bob")
        page.get_by_role("status").filter(has_text=f"You follow {stranger}").wait_for()
        demo.tidings.publish({"type": "page-edited", "actor": stranger, "object": "page:Fog",
                              "payload": {"avatar_url": f"/demo/avatars/{stranger}.svg"}})
        demo.tidings.run_jobs()
        page.goto(f"{demo.url}/#/following")
        page.locator("#list li", has_text=stranger).first.wait_for()
        page.goto(f"{demo.url}/wiki/User:{stranger}")
        page.locator("#follow[aria-pressed='true']").click()  # read back, then unfollowed
        page.locator("#follow[aria-pressed='false']").wait_for()
        assert stranger not in following(demo, "bob")
        page.goto(f"{demo.url}/wiki/User:bob")  # one's own page: nobody to follow
        page.locator("#watch").wait_for()
        assert page.locator("#follow").is_hidden()
    finally:
        context.close()


def following(demo: Demo, user: str) -> set[str]:
    return {f.user for f in demo.tidings.following(user, limit=100).items}
