"""A subscription's ``channels`` route what it brings: ``["email"]`` mails and writes no inbox
item, ``["web"]`` writes the item and mails nothing. The user's preferences still apply (the
stricter wins); a user who is also a recipient or a follower of the actor gets every channel,
and a user with several matching subscriptions gets the union of theirs. Real SMTP server, all
three SQL backends, with and without chunked fan-out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from smtp import SmtpSink
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings

TYPE = EventType("page-edited", category="edits", channels=("web", "email"),
                 audience=("recipients", "object_subscribers", "actor_followers"),
                 templates=Templates(title="{{ actor }} edited {{ object_title }}"))


@pytest.fixture(params=[5000, 1], ids=["one-job", "chunked"])
def t(request: pytest.FixtureRequest, store_url: str, sink: SmtpSink) -> Iterator[Tidings]:
    config = Config(database_url=store_url, smtp_url=sink.url, mail_from="wiki@example.org",
                    token_secret="channels-test-secret-of-at-least-32-bytes",
                    chunk_size=request.param)
    with Tidings(config, types=[TYPE], clock=FrozenClock()) as tidings:
        yield tidings


def _user(t: Tidings, name: str, **prefs: object) -> None:
    t.set_preferences(name, {"email": {"address": f"{name}@example.org"}, **prefs})


def _publish(t: Tidings, recipients: list[str]) -> None:
    t.publish(Event("page-edited", actor="alice", object="page:X", recipients=recipients))
    t.run_jobs()


def _got(t: Tidings, sink: SmtpSink, user: str) -> tuple[int, int]:
    """(inbox items, mails) of ``user``."""
    return len(t.notifications(user).items), len(sink.to(f"{user}@example.org"))


def test_subscription_channels_route_on_top_of_preferences(t: Tidings, sink: SmtpSink) -> None:
    for name in ("bob", "carol", "dave", "erin", "frank", "gina", "hal"):
        _user(t, name)
    _user(t, "ivy", channels={"edits": {"email": False}})
    t.subscribe("bob", "page-edited", "page:X", channels=["email"])
    t.subscribe("carol", "page-edited", "page:X", channels=["web"])
    t.subscribe("dave", "*", "page:X", channels=["web", "email"])
    t.subscribe("erin", "page-edited", "page:X", channels=["email"])  # and a recipient
    t.subscribe("frank", "page-edited", "*", channels=["web"])
    t.subscribe("frank", "*", "page:X", channels=["email"])  # the union: both
    t.subscribe("gina", "page-edited", "page:X", channels=["email"])
    t.follow("gina", "alice")  # a follower hears of everything alice does
    t.subscribe("hal", "page-edited", "page:Y", channels=["web", "email"])  # another page
    t.subscribe("ivy", "page-edited", "page:X", channels=["web", "email"])  # mail off

    _publish(t, recipients=["erin"])
    sink.wait_for(5)

    assert {u: _got(t, sink, u) for u in ("bob", "carol", "dave", "erin", "frank", "gina",
                                          "hal", "ivy")} == {
        "bob": (0, 1), "carol": (1, 0), "dave": (1, 1), "erin": (1, 1), "frank": (1, 1),
        "gina": (1, 1), "hal": (0, 0), "ivy": (1, 0)}
    assert t.unread_count("bob").count == 0
