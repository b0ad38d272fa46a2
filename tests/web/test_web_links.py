"""The web inbox and <tidings-bell> follow only safe links, in a real browser (Chromium).

The server already drops unsafe links when it renders; here the API's answers are rewritten in
the browser so the pages' own checks meet every link a hostile or older server could send.
"""

from __future__ import annotations

import json
from typing import Any

from test_web import Site, browser, site  # noqa: F401  (fixtures)

UNSAFE = ["//evil.example/x", "/\\evil.example/x", "javascript:alert(1)", "/\t/evil.example/x",
          " https://evil.example/"]
SAFE = "/wiki/Fog"
LINKS = [*UNSAFE, SAFE]


def _page_with_links(browser: Any, site: Site, user: str) -> tuple[Any, list[str]]:  # noqa: F811
    """``user``'s inbox, where the n-th newest notification carries LINKS[n]; and a list that
    collects every request to evil.example and every dialog (a script that ran)."""
    context = browser.new_context(viewport={"width": 1024, "height": 900})
    site.contexts.append(context)
    evil: list[str] = []

    def rewrite(route: Any) -> None:
        response = route.fetch()
        data = response.json()
        for n, item in enumerate(data.get("items", [])):
            item["link"] = LINKS[n % len(LINKS)]
        route.fulfill(response=response, body=json.dumps(data))

    def refuse(route: Any) -> None:
        evil.append(route.request.url)
        route.abort()

    context.route("**/v1/me/notifications?**", rewrite)
    context.route("**/v1/me/notifications", rewrite)
    context.route("**://evil.example/**", refuse)
    page = context.new_page()
    page.on("dialog", lambda dialog: (evil.append(f"dialog {dialog.message}"),
                                      dialog.dismiss()))
    page.goto(f"{site.url}/#token={site.token(user)}")
    page.wait_for_function(f"() => document.querySelectorAll('#list li').length >= {len(LINKS)}")
    return page, evil


def test_the_inbox_links_only_safe_links(browser: Any, site: Site) -> None:  # noqa: F811
    for n in range(len(LINKS)):
        site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": f"{n}"})
    page, _ = _page_with_links(browser, site, "bob")

    anchors = page.locator("#list li .title a")
    assert anchors.count() == 1
    assert anchors.first.get_attribute("href") == SAFE


def test_the_bell_follows_only_safe_links(browser: Any, site: Site) -> None:  # noqa: F811
    for n in range(len(LINKS)):
        site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": f"{n}"})
    page, refused = _page_with_links(browser, site, "bob")
    start = page.url

    panel = page.locator("tidings-bell .panel")
    for n in range(len(UNSAFE)):
        if not panel.is_visible():
            page.locator("tidings-bell .bell").click()
        item = page.locator("tidings-bell .item").nth(n)
        item.wait_for()
        with page.expect_response(lambda r: "/v1/me/notifications?" in r.url):
            item.click()  # not followed: the bell reloads its list instead
        page.wait_for_timeout(100)
        assert page.url == start

    assert refused == []
    if not panel.is_visible():
        page.locator("tidings-bell .bell").click()
    with page.expect_navigation():
        page.locator("tidings-bell .item").nth(len(UNSAFE)).click()
    assert page.url == f"{site.url}{SAFE}"
