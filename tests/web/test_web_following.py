"""The web inbox's "Following" page in a real Chromium: the timeline by pages ("Older" follows
the cursor), a followee's new post offered live at the top ("1 new post", from the stream's
``timeline`` event) and never slipped into the pages being read, and the page's script held to
the inbox's strict Content-Security-Policy (no violation reported).

Screenshots go to ``test-artifacts/`` (``following-older*.png``)."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

from typing import Any

from test_web import (  # noqa: F401  (fixtures)
    Site,
    browser,
    open_inbox,
    shot,
    site,
    wait_until,
)
from test_web_inbox import declare

POSTS = 23  # a page of 20, then an older one of 3


def shown_ids(page: Any) -> list[str]:
    ids: list[str] = page.locator("#list li[data-id]").evaluate_all(
        "rows => rows.map((row) => row.dataset.id)")
    return ids


def test_following_pages_older_and_offers_new_posts(browser: Any, site: Site) -> None:
    declare(site)
    site.tidings.follow("bob", "alice")
    for n in range(POSTS):
        site.publish(type="page-edited", actor="alice", object=f"page:P{n}")
    assert wait_until(lambda: len(site.tidings.timeline("bob", limit=100).items) == POSTS, 15)
    timeline = [str(e.id) for e in site.tidings.timeline("bob", limit=100).items]

    page = open_inbox(browser, site, "bob", width=390)
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.get_by_role("link", name="Following").click()
    # the inbox's rows stay until the timeline's replace them: wait for timeline rows
    page.locator("#list li", has=page.locator(".title", has_text=" · ")).nth(19).wait_for()
    assert shown_ids(page) == timeline[:20]
    older = page.get_by_role("button", name="Older")
    older.wait_for()  # shown once the first page is in
    assert page.locator("#newer").is_hidden()

    site.publish(type="page-edited", actor="alice", object="page:Fresh")
    site.publish(type="page-edited", actor="carol", object="page:Elsewhere")  # not followed
    newer = page.get_by_role("button", name="1 new post")
    newer.wait_for(timeout=10_000)

    older.click()
    page.locator("#list li").nth(POSTS - 1).wait_for()
    assert shown_ids(page) == timeline  # the new post neither shifted nor joined the pages
    assert older.is_hidden()
    assert page.get_by_text("That is everything.").is_visible()
    shot(page, "following-older-390")

    newer.click()
    page.locator("#list li .object", has_text="Fresh").wait_for()
    fresh = [str(e.id) for e in site.tidings.timeline("bob", limit=20).items]
    assert wait_until(lambda: shown_ids(page) == fresh)
    assert page.locator("#list li .object").first.inner_text() == "Fresh"
    assert page.locator("#newer").is_hidden()
    assert older.is_visible()
    assert violations == []
