"""The web inbox's pages in a real Chromium: signed out it shows the sign-in form alone; type
labels; rows grouped by day with a read / unread control per row, used by the keyboard; empty
and loading states; preferences grouped by category with a per-channel switch for the channels
this server delivers over; the "Following" page; phone widths and the dark scheme.

Screenshots go to ``test-artifacts/`` (``inbox-*.png``, ``preferences-*.png``,
``following-*.png``)."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from live import LiveServer
from stores import SqliteStores
from test_web import (  # noqa: F401  (fixtures)
    KEY,
    SECRET,
    TYPES,
    Site,
    browser,
    open_inbox,
    release,
    shot,
    site,
    wait_until,
)
from test_web_bell import rewrite_days
from tidings.api.app import create_app
from tidings.config import Config
from tidings.engine import Tidings

LABELLED = {
    "mention": {"category": "mention", "label": "Mention",
                "description": "Someone mentions you on a page or in a discussion.",
                "channels": ["web", "email"],
                "templates": {"title": "{{ actor }} mentioned you: {{ payload.text }}"}},
    "edit-user-talk": {"category": "edit-user-talk", "section": "message",
                       "label": "Talk page message",
                       "description": "Someone leaves a message on your talk page.",
                       "templates": {"title": "{{ actor }} left a message on your talk page"}},
    "page-edited": {"category": "watchlist", "audience": ["actor_followers"],
                    "templates": {"title": "{{ actor }} edited {{ object_title }}"}},
    "page-moved": {"category": "watchlist", "mandatory": True,
                   "templates": {"title": "{{ actor }} moved {{ object_title }}"}},
}


def declare(site: Site) -> None:
    for name, body in LABELLED.items():
        response = site.http.put(f"/v1/types/{name}", json=body)
        assert response.status_code == 200, response.text


@pytest.fixture
def webhook_site(sqlite_stores: SqliteStores) -> Iterator[Site]:
    """A server whose webhooks are on (it has a signing secret)."""
    url = sqlite_stores.clone()
    tidings = Tidings(Config(database_url=url, webhook_secret="w" * 32), types=TYPES)
    app = create_app(tidings, api_keys=(KEY,), token_secret=SECRET, run_worker=True,
                     stream_interval=0.2)
    with LiveServer(app) as server:
        served = Site(server.url, tidings)
        yield served
        for context in served.contexts:
            context.close()
    tidings.close()
    sqlite_stores.drop(url)


def test_signed_out_only_the_sign_in_form(browser: Any, site: Site) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 800})
    site.contexts.append(context)
    page = context.new_page()
    page.goto(site.url)
    page.get_by_role("heading", name="Sign in").wait_for()
    assert page.locator("nav[aria-label=Main]").is_hidden()
    assert page.locator("tidings-bell").is_hidden()
    assert page.locator("#sign-out").is_hidden()
    # relative, so the inbox works mounted under a prefix too (docs/mount.md)
    assert page.locator("link[rel=icon]").get_attribute("href") == "static/favicon.svg"
    shot(page, "inbox-signed-out-390")
    page.locator("#token").fill(site.token("bob"))
    page.get_by_role("button", name="Sign in").click()
    page.locator("#list .empty").wait_for()
    assert page.locator("nav[aria-label=Main]").is_visible()
    assert page.locator("tidings-bell").is_visible()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Sign in").wait_for()
    assert page.locator("tidings-bell").is_hidden()


def test_rows_by_day_with_labels_and_keyboard_controls(browser: Any, site: Site) -> None:
    declare(site)
    site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": "old"})
    site.publish(type="edit-user-talk", actor="carol", object="page:User_talk:bob",
                 recipients=["bob"])
    site.publish(type="page-linked", actor="dave", object="page:Fog", recipients=["bob"])
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    site.contexts.append(context)
    rewrite_days(context)
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    page.locator("#list li").nth(2).wait_for()
    assert page.locator("#list .day h2").all_inner_texts() == ["TODAY", "YESTERDAY", "EARLIER"]
    metas = page.locator("#list .meta").all_inner_texts()
    assert metas[0].startswith("Page linked · ")  # no label declared: the name made readable
    assert metas[1].startswith("Talk page message · ")
    assert metas[2].startswith("Mention · ")
    options = page.locator("#type-filter option").all_inner_texts()
    assert {"Mention", "Talk page message", "Page linked", "Page moved"} <= set(options)
    assert "edit-user-talk" not in options
    page.get_by_role("tab", name="Alerts").filter(has_text="2").wait_for()
    page.get_by_role("tab", name="Messages").filter(has_text="1").wait_for()

    # the tabs by arrow keys, a row's control by Tab and Enter
    page.get_by_role("tab", name="All").focus()
    page.keyboard.press("ArrowRight")
    page.locator("#list li").nth(1).wait_for()
    assert page.get_by_role("tab", name="Alerts").get_attribute("aria-selected") == "true"
    page.keyboard.press("ArrowRight")
    page.get_by_text("carol left a message on your talk page").wait_for()
    assert page.locator("#list li").count() == 1
    control = page.get_by_role("button", name="Mark as read: carol left a message")
    control.focus()
    shot(page, "inbox-row-control-focused")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Mark as unread: carol left a message").wait_for()
    assert site.tidings.unread_count("bob", section="message").count == 0
    page.get_by_role("tab", name="Messages").filter(has_text="1").wait_for(state="hidden")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith(
        "Mark as unread")  # focus stays on the row's control
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Mark as read: carol left a message").wait_for()
    assert site.tidings.unread_count("bob", section="message").count == 1


def test_the_controls_show_on_hover_and_the_page_has_empty_and_loading_states(
        browser: Any, site: Site) -> None:
    site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": "hi"})
    page = open_inbox(browser, site, "bob", width=1280)
    assert site.tidings.unread_count("bob").count == 1
    page.locator("#list li").first.wait_for()
    page.get_by_role("button", name="Mark as read: alice mentioned you: hi").click()
    page.locator("#list li.read").wait_for()
    dot = page.locator("#list li .mark .dot")
    ring = "getComputedStyle(document.querySelector('#list li .mark .dot')).borderTopColor"
    page.mouse.move(5, 700)
    assert page.evaluate(ring) == "rgba(0, 0, 0, 0)"  # read, not hovered: no control drawn
    page.locator("#list li").hover()
    assert page.evaluate(ring) != "rgba(0, 0, 0, 0)"  # hovered: the control shows
    assert dot.count() == 1
    page.locator("#unread-only").check()
    page.get_by_text("Nothing unread").wait_for()
    shot(page, "inbox-empty-unread-only")

    context = browser.new_context(viewport={"width": 390, "height": 700})
    site.contexts.append(context)
    held: list[Any] = []
    context.route("**/v1/me/notifications?limit=**", lambda route: held.append(route))
    slow = context.new_page()
    slow.goto(f"{site.url}/#token={site.token('bob')}")
    slow.locator("#list .skeleton").first.wait_for()
    assert slow.locator("#list").get_attribute("aria-busy") == "true"
    slow.get_by_text("Loading…").wait_for()
    shot(slow, "inbox-loading-390")
    release(slow, context, "**/v1/me/notifications?limit=**", held)
    slow.locator("#list li").first.wait_for()
    assert slow.locator("#list").get_attribute("aria-busy") is None


def test_preferences_by_category_with_the_channels_delivered(browser: Any, site: Site) -> None:
    declare(site)
    site.tidings.set_preferences("bob", {"webhook": {"url": "https://hooks.example.org/bob"},
                                         "email": {"muted_objects": ["page:Sandbox"],
                                                   "delays": {"mention": {
                                                       "email_delay_seconds": 60}}},
                                         "push": {"delays": {"mention": {
                                             "push_delay_seconds": 30}}}})
    page = open_inbox(browser, site, "bob", width=1280)
    page.goto(f"{site.url}/#/preferences")
    page.locator("#matrix tr").first.wait_for()  # shown once loaded
    heads = page.locator("#matrix-head th").all_inner_texts()
    assert heads == ["Category", "Web"]  # neither SMTP nor webhooks on this server
    rows = page.locator("#matrix tr")
    labels = rows.locator(".label").all_inner_texts()
    assert "Talk page message" in labels and "Mention" in labels
    talk = rows.filter(has_text="Talk page message")
    assert talk.locator(".description").inner_text() == (
        "Someone leaves a message on your talk page.")
    watchlist = rows.filter(has_text="Watchlist")  # several types: the category, their labels
    assert watchlist.locator(".description").inner_text() == "Page edited, Page moved"
    assert watchlist.get_by_role("checkbox").is_disabled()  # a mandatory type: always on
    assert page.locator("#no-email").is_visible()
    assert page.locator("#digest-hour").is_disabled()  # immediate: no digest hour
    page.locator("#frequency").select_option("daily")
    page.locator("#digest-hour").select_option(label="18:00")
    page.locator("#timezone").fill("Europe/Berlin")
    page.locator("#email").fill("bob@example.org")
    talk.get_by_role("checkbox", name="Talk page message by Web").uncheck()
    shot(page, "preferences-1280")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved.").wait_for()
    prefs = site.tidings.get_preferences("bob")
    assert prefs["email"] == {"address": "bob@example.org", "frequency": "daily",
                              "timezone": "Europe/Berlin", "digest_hour": 18,
                              "muted_objects": ["page:Sandbox"],  # an unsubscribe link's
                              "delays": {"mention": {"email_delay_seconds": 60,
                                                     "email_unless_read": False}}}  # kept
    assert prefs["channels"]["edit-user-talk"]["web"] is False
    assert prefs["channels"]["mention"]["web"] is True
    assert "email" not in prefs["channels"]["mention"]  # not offered here: not decided here
    assert prefs["webhook"]["url"] == "https://hooks.example.org/bob"  # kept, not wiped
    assert prefs["push"] == {"delays": {"mention": {"push_delay_seconds": 30}}}  # kept


def test_a_webhook_column_when_webhooks_are_on(browser: Any, webhook_site: Site) -> None:
    page = open_inbox(browser, webhook_site, "bob", width=390)
    page.goto(f"{webhook_site.url}/#/preferences")
    page.locator("#matrix tr").first.wait_for()  # shown once loaded
    assert page.locator("#matrix-head th").all_inner_texts() == ["Category", "Web", "Webhook"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "preferences-390")


def test_following_shows_the_timeline(browser: Any, site: Site) -> None:
    declare(site)
    site.tidings.follow("bob", "alice")
    site.publish(type="page-edited", actor="alice", object="page:San_Francisco",
                 payload={"avatar_url": "/static/favicon.svg"})
    assert wait_until(lambda: bool(site.tidings.timeline("bob").items))
    page = open_inbox(browser, site, "bob", width=390)
    page.get_by_role("link", name="Following").click()
    # the inbox's rows stay until the timeline's replace them: wait for a timeline row
    row = page.locator("#list li", has=page.locator(".title", has_text=" · ")).first
    row.wait_for()
    assert row.locator(".title").inner_text() == "alice · Page edited · San Francisco"
    assert row.locator("img.face").get_attribute("src") == "/static/favicon.svg"
    assert page.get_by_role("link", name="Following").get_attribute("aria-current") == "page"
    shot(page, "following-390")
    lonely = open_inbox(browser, site, "carol", width=390)
    lonely.goto(f"{site.url}/#/following")
    lonely.get_by_text("Follow people to see what they do here.").wait_for()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [360, 390, 768, 1280])
def test_every_page_fits_the_width(browser: Any, site: Site, width: int,
                                   scheme: str) -> None:
    declare(site)
    site.tidings.follow("bob", "alice")
    site.publish(type="mention", actor="alice", recipients=["bob"],
                 payload={"text": "a long line that has to wrap on the narrowest phones"})
    site.publish(type="edit-user-talk", actor="carol", object="page:User_talk:bob",
                 recipients=["bob"])
    site.publish(type="page-edited", actor="alice", object="page:Golden_Gate_Bridge")
    context = browser.new_context(viewport={"width": width, "height": 800},
                                  color_scheme=scheme)
    site.contexts.append(context)
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    page.locator("#list li").nth(1).wait_for()
    for name in ("notifications", "following", "preferences"):
        if name != "notifications":
            page.locator("nav[aria-label=Main]").get_by_role("link", name=name.title()).click()
            page.locator("#list li, #matrix tr").first.wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= width, name
        shot(page, f"{name}-{width}-{scheme}")


def test_the_preferences_form_shows_once_loaded(browser: Any, site: Site) -> None:
    """Nothing typed can be overwritten by a late answer: no form until the answer came."""
    context = browser.new_context(viewport={"width": 390, "height": 800})
    site.contexts.append(context)
    held: list[Any] = []
    context.route("**/v1/me/preferences", lambda route: held.append(route))
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    page.locator("#list .empty").wait_for()
    page.goto(f"{site.url}/#/preferences")
    page.get_by_text("Loading…").wait_for()
    assert page.locator("#prefs").is_hidden()
    release(page, context, "**/v1/me/preferences", held)
    page.locator("#prefs").wait_for()
    assert page.locator("#frequency").input_value() == "immediate"
    assert page.get_by_text("Loading…").count() == 0


def test_mute_a_page_from_its_notification_and_see_it_by_title(browser: Any, site: Site) -> None:
    """A notification about a page offers to mute that page (by the object key it carries);
    the preferences page then lists the page by its title, and can unmute it."""
    site.tidings.set_preferences("bob", {"email": {"address": "bob@example.org"}})
    site.publish(type="page-linked", actor="ann", object="page:San_Francisco",
                 recipients=["bob"])
    site.publish(type="mention", actor="cat", recipients=["bob"], payload={"text": "hi"})
    page = open_inbox(browser, site, "bob")
    assert wait_until(lambda: page.locator("#list li").count() == 2)
    mention = page.locator("#list li").filter(has_text="cat mentioned you")
    assert mention.locator("button.mute").count() == 0  # no object: nothing to mute
    linked = page.locator("#list li").filter(has_text="San Francisco was linked")
    linked.get_by_role("button", name="Mute San Francisco").click()
    page.get_by_text("San Francisco is muted.").first.wait_for()
    assert wait_until(lambda: site.tidings.get_preferences("bob")["muted"]["objects"]
                      == ["page:San_Francisco"])
    prefs = site.tidings.get_preferences("bob")
    assert prefs["email"]["address"] == "bob@example.org"  # the rest is kept

    site.publish(type="page-linked", actor="dan", object="page:San_Francisco",
                 recipients=["bob"])
    site.tidings.run_jobs()
    assert [n.actor for n in site.tidings.notifications("bob").items] == ["cat", "ann"]

    page.goto(f"{site.url}/#/preferences")
    muted = page.locator("#muted-objects li")
    muted.first.wait_for()
    assert muted.all_inner_texts() == ["San Francisco\nUnmute"]
    shot(page, "preferences-muted")
    muted.get_by_role("button", name="Unmute San Francisco").click()
    assert muted.count() == 0
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved.").wait_for()
    assert site.tidings.get_preferences("bob")["muted"]["objects"] == []


def test_mute_a_page_by_the_title_the_person_sees(browser: Any, site: Site) -> None:
    """Typed text is resolved against the pages of the person's notifications by title; a
    title that matches none of them is refused with a clear message and nothing is saved."""
    site.publish(type="page-linked", actor="ann", object="page:New_York", recipients=["bob"])
    page = open_inbox(browser, site, "bob")
    page.goto(f"{site.url}/#/preferences")
    page.locator("#prefs").wait_for()
    page.locator("#mute-object").fill("Atlantis")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("No page called “Atlantis” is in your notifications").wait_for()
    assert page.get_by_text("Saved.").count() == 0
    assert site.tidings.get_preferences("bob")["muted"]["objects"] == []

    page.locator("#mute-object").fill("new york")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved.").wait_for()
    assert site.tidings.get_preferences("bob")["muted"]["objects"] == ["page:New_York"]
    assert page.locator("#muted-objects li").all_inner_texts() == ["New York\nUnmute"]
    assert page.locator("#mute-object").input_value() == ""


@pytest.mark.parametrize(("width", "scheme"), [(1280, "light"), (390, "dark")])
def test_a_bundle_opens_in_place_to_its_members(browser: Any, site: Site, width: int,
                                                scheme: str) -> None:
    """A bundled row offers its members: opened, they list in place (newest first, each
    titled alone, unread ones marked), ten at a time with "Show more"; it closes again."""
    actors = [f"user{i:02d}" for i in range(12)]
    for actor in actors:
        site.publish(type="page-linked", actor=actor, object="page:San_Francisco",
                     recipients=["bob"])
    site.publish(type="mention", actor="cat", recipients=["bob"], payload={"text": "hi"})
    context = browser.new_context(viewport={"width": width, "height": 800},
                                  color_scheme=scheme)
    site.contexts.append(context)
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    assert wait_until(lambda: page.locator("#list li.row").count() == 2)
    mention = page.locator("#list li.row").filter(has_text="cat mentioned you")
    assert mention.locator("button.open").count() == 0  # one notification: nothing to open
    bundle = page.locator("#list li.row").filter(has_text="San Francisco was linked")
    opener = bundle.get_by_role("button", name="12 notifications")
    assert opener.get_attribute("aria-expanded") == "false"
    opener.click()
    members = bundle.locator("ul.members li.member")
    assert wait_until(lambda: members.count() == 10)
    assert opener.get_attribute("aria-expanded") == "true"
    titles = [t.strip() for t in members.locator(".member-title").all_inner_texts()]
    assert titles == [f"San Francisco was linked by {a}" for a in actors[::-1][:10]]
    assert bundle.locator("ul.members li.member.unread").count() == 10
    shot(page, f"inbox-bundle-open-{width}-{scheme}")
    bundle.get_by_role("button", name="Show more").click()
    assert wait_until(lambda: members.count() == 12)
    assert bundle.get_by_role("button", name="Show more").count() == 0
    assert members.last.locator(".member-title").inner_text().strip() == \
        f"San Francisco was linked by {actors[0]}"
    opener.click()
    assert bundle.locator("ul.members").is_hidden()
    assert opener.get_attribute("aria-expanded") == "false"
    fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert fits, f"the page is wider than {width} px with a bundle open"


@pytest.mark.parametrize(("width", "scheme"), [(1280, "light"), (390, "dark")])
def test_rows_archive_save_and_snooze_into_their_tabs(browser: Any, site: Site, width: int,
                                                      scheme: str) -> None:
    """A row's Archive, Save and Snooze (and the keys e, s, z on a focused row): an archived
    or snoozed row leaves the inbox for its tab, a saved one stays and lists under Saved too;
    in its tab, the row's undo brings it back."""
    for actor in ("ann", "cat", "dan"):
        site.publish(type="mention", actor=actor, recipients=["bob"], payload={"text": actor})
    context = browser.new_context(viewport={"width": width, "height": 800},
                                  color_scheme=scheme)
    site.contexts.append(context)
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    rows = page.locator("#list li.row")
    assert wait_until(lambda: rows.count() == 3)

    def row(actor: str) -> Any:
        return rows.filter(has_text=f"{actor} mentioned you")

    row("ann").get_by_role("button", name="Archive: ann mentioned you: ann").click()
    assert wait_until(lambda: rows.count() == 2)
    row("cat").locator("button.mark").focus()
    page.keyboard.press("s")  # save: it stays, marked
    assert wait_until(lambda: "saved" in row("cat").locator(".meta").inner_text())
    row("dan").locator("button.mark").focus()
    page.keyboard.press("z")  # snooze: out of the inbox
    assert wait_until(lambda: rows.count() == 1)
    shot(page, f"inbox-triaged-{width}-{scheme}")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    for tab, actor in (("Saved", "cat"), ("Snoozed", "dan"), ("Archived", "ann")):
        page.get_by_role("tab", name=tab).click()
        assert wait_until(lambda actor=actor: rows.count() == 1 and row(actor).count() == 1)
    assert "snoozed until" not in row("ann").locator(".meta").inner_text()
    shot(page, f"inbox-archived-tab-{width}-{scheme}")
    row("ann").locator("button.mark").focus()
    page.keyboard.press("e")  # unarchive: back in the inbox
    assert wait_until(lambda: rows.count() == 0)
    page.get_by_text("Nothing archived").wait_for()
    page.get_by_role("tab", name="All").click()
    assert wait_until(lambda: rows.count() == 2)
    assert [i["id"] for i in site.http.get("/v1/users/bob/notifications",
                                           params={"state": "snoozed"}).json()["items"]]


def test_each_row_says_why_it_arrived_and_participating_keeps_what_is_yours(
        browser: Any, site: Site) -> None:
    """A row's reason in small muted text; the "Participating" toggle keeps what was sent to
    you or mentions you; at 1280 px light and 390 px dark, inside the viewport."""
    from playwright.sync_api import expect  # with Chromium only (the fixture checks it)

    note = {"audience": ["recipients", "actor_followers"], "mentions": "cc",
            "templates": {"title": "{{ actor }} wrote {{ payload.text }}"}}
    assert site.http.put("/v1/types/note", json=note).status_code == 200
    assert site.http.put("/v1/users/bob/follows/alice").status_code == 200
    for text, named, cc in (("a post", [], []), ("to bob", ["bob"], []),
                            ("to bob and cc", ["bob"], ["bob"])):
        site.publish(type="note", actor="alice", object=f"post:{len(text)}", recipients=named,
                     payload={"text": text, "cc": cc})
    assert wait_until(lambda: site.tidings.unread_count("bob").count == 3, timeout=20)
    for width, scheme in ((1280, "light"), (390, "dark")):
        context = browser.new_context(viewport={"width": width, "height": 800},
                                      color_scheme=scheme)
        site.contexts.append(context)
        page = context.new_page()
        page.goto(f"{site.url}/#token={site.token('bob')}")
        page.locator("#list li").nth(2).wait_for()
        rows = page.locator("#list li.row")
        assert [rows.nth(i).locator(".reason").inner_text() for i in range(3)] == [
            "mentioned", "to you", "following"]
        reason = page.locator("#list li.row .reason").first
        assert reason.get_attribute("title") == "You are mentioned"
        muted = page.evaluate("getComputedStyle(document.querySelector('#list .reason')).color")
        title = page.evaluate("getComputedStyle(document.querySelector('#list .title')).color")
        assert muted != title  # muted, not the title's colour
        page.get_by_label("Participating").check()
        expect(rows).to_have_count(2)
        assert "wrote a post" not in page.locator("#list").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, f"inbox-participating-{width}-{scheme}")
        page.get_by_label("Participating").uncheck()
        expect(rows).to_have_count(3)
