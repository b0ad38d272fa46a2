"""<tidings-bell> in a real Chromium: the flyout lies inside the viewport at phone and desktop
widths; the badge counts the unseen and clears when opened while the dots stay until read; the
tabs count the unread; it is used with the keyboard alone and announced to screen readers; its
loading, empty and day-grouped states; avatars and type icons; the dark scheme.

Screenshots go to ``test-artifacts/`` (``flyout-*.png``)."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from test_web import (  # noqa: F401  (fixtures)
    Site,
    badge,
    browser,
    open_inbox,
    release,
    shot,
    site,
    wait_until,
)

WIDTHS = [360, 390, 768, 1280]
HEIGHT = 800


def bell_eval(page: Any, script: str) -> Any:
    """Evaluate ``script`` with ``root`` bound to the bell's shadow root."""
    return page.evaluate(f"() => {{ const root = document.querySelector('tidings-bell')"
                         f".shadowRoot; return {script}; }}")


def publish_some(site: Site, user: str = "bob", *, alerts: int = 3, messages: int = 1) -> None:
    for n in range(alerts):
        site.publish(type="mention", actor=["alice", "carol", "dave"][n % 3], recipients=[user],
                     payload={"text": f"alert {n}"})
    for _ in range(messages):
        site.publish(type="message", actor="erin", recipients=[user])


def open_flyout(page: Any) -> Any:
    page.locator("tidings-bell .bell").click()
    panel = page.locator("tidings-bell .panel")
    panel.wait_for()
    return panel


@pytest.mark.parametrize("width", WIDTHS)
def test_the_flyout_lies_inside_the_viewport(browser: Any, site: Site, width: int) -> None:
    publish_some(site)
    page = open_inbox(browser, site, "bob", width=width)
    badge(page).filter(has_text="4").wait_for(timeout=5000)
    panel = open_flyout(page)
    page.locator("tidings-bell .item").first.wait_for()
    box = panel.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (box, width)
    assert box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT, box
    for part in ("tidings-bell .tab", "tidings-bell .item .title", "tidings-bell .foot"):
        inner = page.locator(part).first.bounding_box()  # "Alerts", titles: none cut off
        assert box["x"] <= inner["x"] and inner["x"] + inner["width"] <= box["x"] + box["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"flyout-{width}")


def test_the_badge_counts_unseen_and_the_dots_stay_until_read(browser: Any, site: Site) -> None:
    publish_some(site, alerts=3, messages=1)
    page = open_inbox(browser, site, "bob", width=1280)
    badge(page).filter(has_text="4").wait_for(timeout=5000)
    assert bell_eval(page, "root.querySelector('.bell').getAttribute('aria-label')") == (
        "Notifications, 4 new")
    open_flyout(page)
    badge(page).wait_for(state="hidden", timeout=5000)  # opened: seen
    assert wait_until(lambda: site.tidings.unseen_count("bob").count == 0)
    assert site.tidings.unread_count("bob").count == 4  # seen is not read
    tabs = page.locator("tidings-bell .tab")
    tabs.nth(0).filter(has_text="Alerts3").wait_for()
    tabs.nth(1).filter(has_text="Messages1").wait_for()
    assert tabs.nth(0).get_attribute("aria-label") == "Alerts, 3 unread"
    page.locator("tidings-bell .item.unread").nth(2).wait_for()
    assert page.locator("tidings-bell .item").count() == 3
    shot(page, "flyout-seen-not-read")

    page.keyboard.press("Escape")
    site.publish(type="mention", actor="frank", recipients=["bob"], payload={"text": "later"})
    badge(page).filter(has_text="1").wait_for(timeout=5000)  # news since it was opened
    open_flyout(page)
    badge(page).wait_for(state="hidden", timeout=5000)
    tabs.nth(0).filter(has_text="Alerts4").wait_for(timeout=5000)
    first = page.locator("tidings-bell .row").first
    first.hover()
    first.locator(".mark").click()  # the row's own control: read, without opening it
    tabs.nth(0).filter(has_text="Alerts3").wait_for(timeout=5000)
    assert "unread" not in (first.locator(".item").get_attribute("class") or "")
    assert site.tidings.unread_count("bob").count == 4


def test_the_flyout_with_the_keyboard_alone(browser: Any, site: Site) -> None:
    publish_some(site, alerts=2, messages=1)
    page = open_inbox(browser, site, "bob", width=1280)
    badge(page).filter(has_text="3").wait_for(timeout=5000)
    for _ in range(12):  # from the top of the page, Tab reaches the bell
        page.keyboard.press("Tab")
        if bell_eval(page, "root.activeElement && root.activeElement.className") == "bell":
            break
    else:
        raise AssertionError("Tab never reached the bell")
    button = page.locator("tidings-bell .bell")
    assert button.get_attribute("aria-haspopup") == "dialog"
    assert button.get_attribute("aria-expanded") == "false"
    page.keyboard.press("Enter")
    panel = page.locator("tidings-bell .panel")
    panel.wait_for()
    assert button.get_attribute("aria-expanded") == "true"
    assert panel.get_attribute("role") == "dialog"
    assert bell_eval(page, "root.getElementById(root.querySelector('.panel')"
                           ".getAttribute('aria-labelledby')).textContent") == "Notifications"
    assert bell_eval(page, "root.activeElement.id") == "tab-alert"  # focus moved in
    page.locator("tidings-bell .item").nth(1).wait_for()

    page.keyboard.press("ArrowRight")  # tabs move with the arrows
    assert bell_eval(page, "root.activeElement.id") == "tab-message"
    page.locator("tidings-bell .item", has_text="erin wrote to you").wait_for()
    assert page.locator("tidings-bell [role=tabpanel]").get_attribute(
        "aria-labelledby") == "tab-message"
    page.keyboard.press("ArrowLeft")
    page.locator("tidings-bell .item").nth(1).wait_for()

    page.keyboard.press("Tab")  # into the list
    assert bell_eval(page, "root.activeElement.classList.contains('item')")
    page.keyboard.press("ArrowDown")
    second = bell_eval(page, "root.activeElement.dataset.id")
    assert second == page.locator("tidings-bell .item").nth(1).get_attribute("data-id")
    page.keyboard.press("Tab")  # that row's read control
    assert bell_eval(page, "root.activeElement.getAttribute('aria-label')").startswith(
        "Mark as read: ")
    page.keyboard.press("Enter")
    assert wait_until(lambda: site.tidings.unread_count("bob").count == 2)
    # focus stays on the control, now the other way round once the answer is drawn
    assert wait_until(lambda: bell_eval(
        page, "root.activeElement.getAttribute('aria-label')").startswith("Mark as unread: "))

    site.publish(type="mention", actor="grace", recipients=["bob"], payload={"text": "hey"})
    page.wait_for_function("""() => document.querySelector('tidings-bell').shadowRoot
        .querySelector('.live').textContent.includes('grace mentioned you: hey')""", timeout=5000)
    assert page.locator("tidings-bell .live").get_attribute("aria-live") == "polite"
    shot(page, "flyout-keyboard")
    page.keyboard.press("Escape")
    panel.wait_for(state="hidden")
    assert bell_eval(page, "root.activeElement.className") == "bell"  # focus returns


def rewrite_days(context: Any) -> None:
    """Answers of the inbox, with the 2nd item made yesterday's and the rest ten days old."""
    now = datetime.now(UTC)
    yesterday = (now - timedelta(days=1)).replace(hour=12, minute=0)
    if now.astimezone().date() - yesterday.astimezone().date() != timedelta(days=1):
        yesterday = now - timedelta(days=1)
    stamps = [None, yesterday, now - timedelta(days=10)]

    def rewrite(route: Any) -> None:
        response = route.fetch()
        data = response.json()
        for n, item in enumerate(data.get("items", [])):
            stamp = stamps[min(n, 2)]
            if stamp is not None:
                item["created_at"] = stamp.isoformat().replace("+00:00", "Z")
        route.fulfill(response=response, body=json.dumps(data))

    context.route("**/v1/me/notifications?**", rewrite)


def test_days_avatars_icons_loading_and_empty(browser: Any, site: Site) -> None:
    site.publish(type="mention", actor="alice", recipients=["bob"],
                 payload={"text": "old", "avatar_url": "javascript:alert(1)"})
    site.publish(type="page-linked", actor="carol", object="page:Fog", recipients=["bob"])
    site.publish(type="mention", actor="dave", recipients=["bob"],
                 payload={"text": "new", "avatar_url": "/static/favicon.svg"})
    context = browser.new_context(viewport={"width": 1280, "height": HEIGHT})
    site.contexts.append(context)
    rewrite_days(context)
    held: list[Any] = []
    context.route("**/v1/me/notifications?section=**", lambda route: held.append(route))
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    badge(page).filter(has_text="3").wait_for(timeout=5000)
    open_flyout(page)
    page.locator("tidings-bell .skeleton").first.wait_for()  # loading
    assert page.locator("tidings-bell .body").get_attribute("aria-busy") == "true"
    shot(page, "flyout-loading")
    release(page, context, "**/v1/me/notifications?section=**", held)
    page.locator("tidings-bell .item").nth(2).wait_for()
    assert page.locator("tidings-bell .day").all_inner_texts() == [
        "TODAY", "YESTERDAY", "EARLIER"]  # upper-cased by the style
    assert page.locator("tidings-bell .body").get_attribute("aria-busy") is None
    faces = page.locator("tidings-bell .item .face")
    assert faces.nth(0).get_attribute("src") == "/static/favicon.svg"  # the payload's avatar
    assert faces.nth(1).inner_text() == "C"  # initials
    assert faces.nth(2).inner_text() == "A"  # an unsafe avatar_url is not loaded
    assert page.locator("tidings-bell .item .kind svg").count() == 3  # the type's icon
    old_meta = page.locator("tidings-bell .item .meta").nth(2).inner_text()
    assert "ago" not in old_meta  # a date
    assert str((datetime.now().astimezone() - timedelta(days=10)).day) in old_meta
    shot(page, "flyout-days")

    empty = open_inbox(browser, site, "nobody", width=390)
    open_flyout(empty)
    note = empty.locator("tidings-bell .note")
    note.filter(has_text="You're all caught up").wait_for()
    assert "New notifications will show up here." in note.inner_text()
    shot(empty, "flyout-empty-390")


@pytest.mark.parametrize("width", [390, 1280])
def test_the_dark_scheme_follows_the_system(browser: Any, site: Site, width: int) -> None:
    publish_some(site)
    context = browser.new_context(viewport={"width": width, "height": HEIGHT},
                                  color_scheme="dark")
    site.contexts.append(context)
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    page.locator("#list li").nth(3).wait_for()
    panel = open_flyout(page)
    page.locator("tidings-bell .item").first.wait_for()
    background = "getComputedStyle(root.querySelector('.panel')).backgroundColor"
    assert bell_eval(page, background) == "rgb(30, 32, 40)"
    page_background = "getComputedStyle(document.documentElement).backgroundColor"
    assert page.evaluate(page_background) == "rgb(20, 22, 28)"
    shot(page, f"flyout-dark-{width}")
    page.evaluate("document.querySelector('tidings-bell').setAttribute('theme', 'light')")
    assert bell_eval(page, background) == "rgb(255, 255, 255)"  # the attribute wins
    assert panel.is_visible()


def test_a_host_page_may_route_a_click_itself(browser: Any, site: Site) -> None:
    declared = site.http.put("/v1/types/linked", json={
        "templates": {"title": "{{ object_title }} was linked", "link": "/wiki/{{ object }}"}})
    assert declared.status_code == 200, declared.text
    site.publish(type="linked", actor="alice", object="page:Fog", recipients=["bob"])
    page = open_inbox(browser, site, "bob", width=1280)
    start = page.url
    page.evaluate("""() => { window.opened = [];  // on the document: the events bubble
        document.addEventListener('tidings-open', (event) => {
            event.preventDefault(); window.opened.push(event.detail.link); }); }""")
    open_flyout(page)
    item = page.locator("tidings-bell .item", has_text="Fog was linked")
    assert item.get_attribute("href") == "/wiki/page:Fog"  # a real link: middle-click works
    item.click()
    page.wait_for_function("() => window.opened.length === 1")
    assert page.evaluate("window.opened") == ["/wiki/page:Fog"]
    assert page.url == start  # the page routed it (here: nowhere)
    assert wait_until(lambda: site.tidings.unread_count("bob").count == 0)
