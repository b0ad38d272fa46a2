"""Web Push in the web inbox, in Chromium: "Enable push" asks nothing on page load, subscribes
with the server's VAPID key when pressed and hands the subscription to tidings; the service
worker shows a push as a notification and opens (or focuses) its link on a click.

Headless Chromium has no push service to subscribe at (its pushes go through Google's servers),
so the page's ``PushManager.subscribe`` answers with a subscription at the loopback push
service of ``pushservice.py`` instead; the rest is real: the server encrypts and signs the push,
the stand-in decrypts it, and the decrypted payload is handed to the service worker as the push
event the browser would dispatch."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from live import LiveServer, free_port
from pushservice import PushService
from stores import SqliteStores
from test_web import KEY, SECRET, TYPES, Site, browser, wait_until  # noqa: F401  (fixtures)
from tidings.api.app import create_app
from tidings.channels.push import keys
from tidings.config import Config
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings

PRIVATE, PUBLIC = keys.generate()
PUSHED = EventType("mention", audience=("recipients",), channels=("web", "push"),
                   templates=Templates(title="{{ actor }} mentioned you: {{ payload.text }}",
                                       link="/#/notifications"))
# the subscription the page's PushManager gives (see the module's docstring)
FAKE_SUBSCRIBE = """
PushManager.prototype.subscribe = async function (options) {
  window.subscribedWith = options;
  const subscription = JSON.parse(SUBSCRIPTION);
  return { ...subscription, toJSON: () => subscription };
};
PushManager.prototype.getSubscription = async function () { return null; };
"""


@pytest.fixture
def service() -> Iterator[PushService]:
    with PushService(PUBLIC) as service:
        yield service


@pytest.fixture
def push_site(sqlite_stores: SqliteStores) -> Iterator[Site]:
    url = sqlite_stores.clone()
    types = [PUSHED, *(t for t in TYPES if t.name != "mention")]
    port = free_port()
    tidings = Tidings(Config(database_url=url, vapid_private_key=PRIVATE,
                             webhook_allow=("127.0.0.1",),
                             public_url=f"http://127.0.0.1:{port}"), types=types)
    for event_type in types:
        tidings.define_type(event_type)
    app = create_app(tidings, api_keys=(KEY,), token_secret=SECRET, run_worker=True,
                     stream_interval=0.2)
    with LiveServer(app, port=port) as server:
        site = Site(server.url, tidings)
        yield site
        for context in site.contexts:
            context.close()
    tidings.close()
    sqlite_stores.drop(url)


def test_enable_push_then_show_and_open_a_push(browser: Any, push_site: Site,
                                               service: PushService) -> None:
    site = push_site
    phone = service.browser("phone")
    context = browser.new_context(viewport={"width": 1024, "height": 800})
    site.contexts.append(context)
    context.add_init_script(f"const SUBSCRIPTION = {json.dumps(json.dumps(phone.subscription()))};"
                            + FAKE_SUBSCRIBE)
    page = context.new_page()
    page.goto(f"{site.url}/#token={site.token('bob')}")
    page.wait_for_selector("#list li, #list .empty")
    page.goto(f"{site.url}/#/preferences")
    page.get_by_role("button", name="Enable push").wait_for()
    assert page.locator("#matrix-head th", has_text="Push").count() == 1
    # nothing asked, nothing registered on load
    assert page.evaluate("Notification.permission") == "default"
    assert page.evaluate("navigator.serviceWorker.getRegistrations().then((r) => r.length)") == 0
    assert site.tidings.push.list("bob") == []

    context.grant_permissions(["notifications"], origin=site.url)
    with context.expect_event("serviceworker") as registered:
        page.get_by_role("button", name="Enable push").click()
    worker = registered.value
    page.get_by_text("Push is on for this browser.").wait_for()
    assert page.evaluate("window.subscribedWith.userVisibleOnly") is True
    assert page.evaluate("window.subscribedWith.applicationServerKey") == PUBLIC
    assert [s.endpoint for s in site.tidings.push.list("bob")] == [phone.endpoint]

    site.publish(type="mention", actor="alice", recipients=["bob"], payload={"text": "hi"})
    assert wait_until(lambda: service.received.get("phone"), 10), service.errors
    payload = service.received["phone"][0]["payload"]
    assert payload["title"] == "alice mentioned you: hi" and service.errors == []

    # the push as the browser would dispatch it to the worker
    push = """(text) => { self.dispatchEvent(new PushEvent("push", { data: text })); }"""
    worker.evaluate(push, json.dumps(payload))
    shown = """navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((all) =>
        all.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data })))"""
    assert wait_until(lambda: page.evaluate(shown), 5)
    [notification] = page.evaluate(shown)
    assert notification == {"title": "alice mentioned you: hi", "body": "1 unread",
                            "tag": payload["group"],
                            "data": {"link": payload["link"], "id": payload["id"]}}

    # A click: the browser lets only a real one open, focus or move a window, so the worker's
    # openWindow, focus and navigate are recorded here rather than carried out. A window on
    # the inbox is focused and sent to the link.
    worker.evaluate("""() => {
        self.calls = [];
        self.clients.openWindow = async (url) => { self.calls.push(["open", url]); };
        WindowClient.prototype.focus = async function () {
            self.calls.push(["focus", this.url.split("#")[0]]); };
        WindowClient.prototype.navigate = async function (url) {
            self.calls.push(["navigate", url]); };
    }""")
    click = """() => self.registration.getNotifications().then(([n]) => {
        self.dispatchEvent(new NotificationEvent("notificationclick", { notification: n }));
        return new Promise((resolve) => setTimeout(() => resolve(self.calls.splice(0)), 200));
    })"""
    assert payload["link"] == f"{site.url}/#/notifications"
    assert worker.evaluate(click) == [["focus", site.url + "/"], ["navigate", payload["link"]]]
    assert not page.evaluate(shown)  # the click closed it
    page.goto("about:blank")  # no window shows the inbox: one is opened
    worker.evaluate(push, json.dumps(payload))
    count = "() => self.registration.getNotifications().then((all) => all.length)"
    assert wait_until(lambda: worker.evaluate(count) == 1, 5)
    assert worker.evaluate(click) == [["open", payload["link"]]]
