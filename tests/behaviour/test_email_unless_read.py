"""Email only if still unread: a type with ``email_delay_seconds`` mails that long after
delivery, and with ``email_unless_read`` only if the notification is unread then. Proven both
ways — read on the web within the delay: no mail; unread: exactly one; retracted: none —
through a real SMTP server, on SQLite and PostgreSQL, in-process and with the API and the
worker as separate processes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from processes import WorkerProcess
from servers import TOKEN_SECRET, start
from smtp import SmtpSink
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.exceptions import InvalidEventType

pytest_plugins = ["servers"]

DELAY = 600
TYPES = [
    EventType("reply", channels=("web", "email"), audience=("recipients",),
              email_delay_seconds=DELAY, email_unless_read=True,
              templates=Templates(title="{{ actor }} replied")),
    EventType("reminder", channels=("web", "email"), audience=("recipients",),
              email_delay_seconds=DELAY, templates=Templates(title="{{ actor }} reminds you")),
    EventType("chat", category="talk", channels=("web", "email"), audience=("recipients",),
              templates=Templates(title="{{ actor }} wrote")),
    EventType("like", bundle="object", channels=("web", "email"), audience=("recipients",),
              email_delay_seconds=DELAY, email_unless_read=True,
              templates=Templates(title="{{ actor }} liked {{ object }}",
                                  bundled_title="{{ actors_text }} liked {{ object }}")),
]
BOB = "bob@example.org"


@pytest.fixture(params=["sqlite", "postgresql"])
def mail_store(request: pytest.FixtureRequest) -> Iterator[str]:
    stores = request.getfixturevalue(f"{request.param}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


@pytest.fixture
def world(mail_store: str, sink: SmtpSink) -> Iterator[tuple[Tidings, FrozenClock]]:
    clock = FrozenClock()
    config = Config(database_url=mail_store, smtp_url=sink.url, token_secret=TOKEN_SECRET,
                    email_window_seconds=3600)
    with Tidings(config, types=TYPES, clock=clock) as t:
        t.set_preferences("bob", {"email": {"address": BOB}})
        yield t, clock


def publish(t: Tidings, type: str, actor: str = "alice", object: str = "page:A") -> str:
    published = t.publish(Event(type, actor=actor, object=object, recipients=["bob"]))
    t.run_jobs()
    return published.id


def test_read_within_the_delay_sends_no_mail(world: tuple[Tidings, FrozenClock],
                                             sink: SmtpSink) -> None:
    t, clock = world
    event_id = publish(t, "reply")
    clock.advance(DELAY / 2)
    t.run_jobs()
    assert sink.to(BOB) == []  # not yet
    (item,) = t.notifications("bob").items
    t.mark_read("bob", [item.id])
    clock.advance(DELAY)
    t.run_jobs()
    time.sleep(0.3)
    assert sink.to(BOB) == []
    assert event_id


def test_unread_after_the_delay_sends_exactly_one(world: tuple[Tidings, FrozenClock],
                                                  sink: SmtpSink) -> None:
    t, clock = world
    publish(t, "reply")
    clock.advance(DELAY - 1)
    t.run_jobs()
    time.sleep(0.2)
    assert sink.to(BOB) == []
    clock.advance(2)
    t.run_jobs()
    (mail,) = sink.wait_for(1)
    assert mail["Subject"] == "alice replied"
    clock.advance(DELAY * 10)
    t.run_jobs()
    time.sleep(0.2)
    assert len(sink.to(BOB)) == 1


def test_a_retracted_notification_sends_none(world: tuple[Tidings, FrozenClock],
                                             sink: SmtpSink) -> None:
    t, clock = world
    publish(t, "reply", object="page:R")
    t.retract(type="reply", object="page:R")
    t.run_jobs()
    clock.advance(DELAY * 2)
    t.run_jobs()
    time.sleep(0.3)
    assert sink.to(BOB) == []


def test_without_unless_read_a_delayed_mail_goes_even_when_read(
        world: tuple[Tidings, FrozenClock], sink: SmtpSink) -> None:
    t, clock = world
    publish(t, "reminder")
    t.mark_read("bob", [t.notifications("bob").items[0].id])
    clock.advance(DELAY + 1)
    t.run_jobs()
    (mail,) = sink.wait_for(1)
    assert mail["Subject"] == "alice reminds you"


def test_a_bundle_window_mails_only_what_is_still_unread(
        world: tuple[Tidings, FrozenClock], sink: SmtpSink) -> None:
    t, clock = world
    publish(t, "like", actor="carol")  # first of its window: mailed after the delay
    clock.advance(DELAY + 1)
    t.run_jobs()
    assert len(sink.wait_for(1)) == 1
    publish(t, "like", actor="dave")  # inside the window: waits for its end
    publish(t, "like", actor="erin")
    t.mark_read("bob", [t.notifications("bob").items[0].id])  # the bundle, read
    clock.advance(3600)
    t.run_jobs()
    time.sleep(0.3)
    assert len(sink.to(BOB)) == 1  # nothing unread at the window's end: no second mail


def test_a_users_category_setting_delays_and_skips_what_was_read(
        world: tuple[Tidings, FrozenClock], sink: SmtpSink) -> None:
    t, clock = world
    t.set_preferences("bob", {"email": {"address": BOB, "delays": {
        "talk": {"email_delay_seconds": DELAY, "email_unless_read": True}}}})
    t.set_preferences("cy", {"email": {"address": "cy@example.org"}})
    for who in ("bob", "cy"):
        t.publish(Event("chat", actor="alice", object="page:T", recipients=[who]))
    t.run_jobs()
    assert len(sink.wait_for(1)) == 1 and sink.to("cy@example.org")  # cy: at once
    assert sink.to(BOB) == []
    t.mark_read("bob", [t.notifications("bob").items[0].id])
    publish(t, "chat", actor="dan", object="page:U")  # left unread
    clock.advance(DELAY + 1)
    t.run_jobs()
    sink.wait_for(2)
    time.sleep(0.2)
    assert [m["Subject"] for m in sink.to(BOB)] == ["dan wrote"]  # exactly one: the unread


def test_a_users_setting_overrides_the_types_delay(world: tuple[Tidings, FrozenClock],
                                                   sink: SmtpSink) -> None:
    t, _clock = world
    t.set_preferences("bob", {"email": {"address": BOB, "delays": {
        "general": {"email_delay_seconds": 0}}}})
    publish(t, "reply")  # the type waits 600 s; bob wants it at once
    (mail,) = sink.wait_for(1)
    assert mail["Subject"] == "alice replied"


@pytest.mark.parametrize(("key", "value"), [("email_delay_seconds", -1),
                                            ("email_delay_seconds", 7 * 86_400 + 1),
                                            ("email_delay_seconds", True),
                                            ("email_unless_read", "yes")])
def test_bad_delay_settings_are_refused(key: str, value: object) -> None:
    with pytest.raises(InvalidEventType) as refused:
        EventType.from_dict("x", {key: value})
    assert refused.value.field == key


def test_types_keep_the_rule_through_the_store_and_the_api(api_store_url: str,
                                                           sink: SmtpSink,
                                                           tmp_path: Path) -> None:
    """The API declares the type and publishes; a worker process of its own mails, 5 s after
    delivery, only what is still unread."""
    with contextlib.ExitStack() as stack:
        live = start(stack, api_store_url, types=(), run_worker=False)
        with live.client() as server:
            declared = server.put_type("nudge", {
                "channels": ["web", "email"], "audience": ["recipients"],
                "email_delay_seconds": 5, "email_unless_read": True,
                "templates": {"title": "{{ actor }} nudged you"}})
            assert declared["email_delay_seconds"] == 5 and declared["email_unless_read"]
            bad = live.http().put("/v1/types/nudge2", json={"email_delay_seconds": -5})
            assert bad.status_code == 422
            live.tidings.set_preferences("bob", {"email": {"address": BOB}})
            stack.enter_context(WorkerProcess(api_store_url, tmp_path, {
                "TIDINGS_SMTP_URL": sink.url, "TIDINGS_TOKEN_SECRET": TOKEN_SECRET}))
            published = time.monotonic()
            server.publish("nudge", actor="alice", recipients=["bob"])
            server.publish("nudge", actor="carol", recipients=["bob"])
            with live.client(live.token("bob")) as bob:
                deadline = time.monotonic() + 10
                while len(bob.notifications()["items"]) < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                items = bob.notifications()["items"]
                read = next(i for i in items if i["actor"] == "alice")
                bob.mark_read(ids=[read["id"]])
            assert time.monotonic() - published < 4, "read too late to prove anything"
            (mail,) = sink.wait_for(1, timeout=15)
            assert mail["Subject"] == "carol nudged you"
            assert live.settled(15)
            assert [m["Subject"] for m in sink.to(BOB)] == ["carol nudged you"]
