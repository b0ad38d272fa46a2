"""ESN's privacy filter: an event type names a rule — followers of the actor only, members of a
group, or a Python callable registered on the engine — and fan-out applies it to every audience
source, chunk by chunk, before it writes anything (inbox, timeline, mail)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from engines import table_rows
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.domain.views import StoredEvent
from tidings.engine import Tidings
from tidings.exceptions import InvalidEventType, InvalidInput

EVERYONE = ("recipients", "object_subscribers", "actor_followers")
TYPES = (
    EventType("diary", audience=EVERYONE, privacy="followers"),
    EventType("staff-note", audience=EVERYONE, privacy="group:staff"),
    EventType("even-only", audience=EVERYONE, privacy="rule:even"),
    EventType("open", audience=EVERYONE),
)
USERS = ["u1", "u2", "u3", "u4", "u5", "u6"]


@pytest.fixture(params=[5000, 2], ids=["one-job", "chunked"])
def t(request: pytest.FixtureRequest, store_url: str) -> Iterator[Tidings]:
    config = Config(database_url=store_url, chunk_size=request.param)
    with Tidings(config, types=TYPES, clock=FrozenClock()) as tidings:
        # u1, u2 follow alice; u3, u4 subscribe to the page; u5, u6 are named as recipients
        for user in ("u1", "u2"):
            tidings.follow(user, "alice")
        for user in ("u3", "u4"):
            tidings.subscribe(user, "*", "page:X")
        yield tidings


def _publish(t: Tidings, type: str) -> str:
    published = t.publish(Event(type, actor="alice", object="page:X", recipients=["u5", "u6"]))
    t.run_jobs()
    return published.id


def _reached(t: Tidings, event_id: str) -> list[str]:
    return sorted(r["user_id"] for r in table_rows(t, "notifications")
                  if r["event_id"] == int(event_id))


def test_without_a_rule_every_source_is_reached(t: Tidings) -> None:
    assert _reached(t, _publish(t, "open")) == USERS


def test_followers_only_reaches_the_actors_followers_from_every_source(t: Tidings) -> None:
    t.follow("u4", "alice")  # a subscriber who also follows
    t.follow("u6", "alice")  # a recipient who also follows
    event_id = _publish(t, "diary")

    assert _reached(t, event_id) == ["u1", "u2", "u4", "u6"]
    assert sorted(r["user_id"] for r in table_rows(t, "timelines")) == ["u1", "u2", "u4", "u6"]


def test_a_group_rule_reaches_its_members_only(t: Tidings) -> None:
    for user in ("u2", "u3", "u5", "zed"):
        assert t.add_member("staff", user) is True
    assert t.add_member("staff", "u3") is False  # already one
    assert t.remove_member("staff", "u5") is True
    assert t.remove_member("staff", "u5") is False

    assert _reached(t, _publish(t, "staff-note")) == ["u2", "u3"]
    first = t.members("staff", limit=2)
    assert [m.user for m in first.items] == ["u2", "u3"]
    assert first.next_cursor is not None
    assert [m.user for m in t.members("staff", cursor=first.next_cursor).items] == ["zed"]


def test_a_registered_callable_sees_every_user_in_batches(t: Tidings) -> None:
    batches: list[list[str]] = []

    def even(event: StoredEvent, users: Sequence[str]) -> list[str]:
        assert event.type == "even-only" and event.actor == "alice"
        batches.append(list(users))
        return [u for u in users if int(u[1:]) % 2 == 0]

    t.privacy_rule("even", even)
    assert _reached(t, _publish(t, "even-only")) == ["u2", "u4", "u6"]
    assert sorted(u for batch in batches for u in batch) == USERS
    assert max(len(b) for b in batches) <= t.config.chunk_size


def test_an_unregistered_rule_delivers_nothing(t: Tidings) -> None:
    event_id = _publish(t, "even-only")  # no callable named "even" in this process

    assert _reached(t, event_id) == []
    assert table_rows(t, "timelines") == []
    (failure, *_) = t.queue.failures()
    assert "even" in failure.error
    t.privacy_rule("even", lambda event, users: [u for u in users if u == "u2"])
    assert isinstance(t.clock, FrozenClock)
    t.clock.advance(60)  # past the retry's backoff (at most job_backoff_seconds: 2 s)
    t.run_jobs()
    assert _reached(t, event_id) == ["u2"]


def test_privacy_rules_are_checked_when_a_type_is_declared() -> None:
    for bad in ("everyone", "group:", "rule:", "group:a b", 7):
        with pytest.raises(InvalidEventType, match="privacy"):
            EventType("x", privacy=bad)  # type: ignore[arg-type]
    assert EventType.from_dict("x", {"privacy": "group:staff"}).privacy == "group:staff"
    assert EventType("x", privacy="rule:even").to_dict()["privacy"] == "rule:even"


def test_group_names_and_members_are_checked(t: Tidings) -> None:
    with pytest.raises(InvalidInput):
        t.add_member("bad name", "u1")
    with pytest.raises(InvalidInput):
        t.add_member("staff", "")
    with pytest.raises(InvalidInput):
        t.privacy_rule("bad name", lambda event, users: users)
    for name in ("staff\n", "rule\n"):  # a whole-string match: no name before a newline
        with pytest.raises(InvalidInput):
            t.add_member(name, "u1")
        with pytest.raises(InvalidInput):
            t.privacy_rule(name, lambda event, users: users)
    with pytest.raises(InvalidEventType):
        t.define_type(EventType("leak", privacy="group:staff\n"))


def test_a_stored_type_keeps_its_rule_for_other_processes(t: Tidings, store_url: str) -> None:
    t.define_type(EventType("secret", audience=EVERYONE, privacy="group:staff"))
    with Tidings(Config(database_url=store_url)) as other:
        other.load_types()
        assert other.get_type("secret").privacy == "group:staff"
    assert "privacy" not in EventType("plain").to_dict()
