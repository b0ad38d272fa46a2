"""Retraction (a like withdrawn): gone from every inbox at once, and never delivered later."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import inbox_of, jobs_by_func, open_tidings, recipients_of
from tidings.engine import Tidings, UnreadCount
from tidings.exceptions import InvalidInput


@pytest.fixture
def t(any_store_url: str) -> Iterator[Tidings]:
    with open_tidings(any_store_url) as tidings:
        yield tidings


def _like(t: Tidings, actor: str, obj: str, *recipients: str) -> str:
    event_id = t.publish({"type": "page-linked", "actor": actor, "object": obj,
                          "recipients": list(recipients)}).id
    t.run_jobs()
    return event_id


def test_retract_by_type_actor_object_removes_from_every_inbox(t: Tidings) -> None:
    t.subscribe("dave", "page-linked", "page:Rome")
    gone = _like(t, "alice", "page:Rome", "bob", "carol")
    other_object = _like(t, "alice", "page:Oslo", "bob")
    other_actor = _like(t, "erin", "page:Rome", "carol")
    assert t.unread_count("dave") == UnreadCount(1, "1")

    removed = t.retract(type="page-linked", actor="alice", object="page:Rome")

    assert removed == 3
    assert recipients_of(t, gone) == []
    assert recipients_of(t, other_object) == ["bob"]
    assert recipients_of(t, other_actor) == ["carol", "dave"]
    assert inbox_of(t, "bob") == [("page-linked", "alice", "page:Oslo")]
    assert t.unread_count("bob") == UnreadCount(1, "1")
    assert t.unread_count("dave") == UnreadCount(1, "1")  # erin's link remains
    assert t.get_event(gone).retracted_at is not None
    assert t.get_event(other_object).retracted_at is None


def test_retract_by_any_subset_of_fields(t: Tidings) -> None:
    one = _like(t, "alice", "page:Rome", "bob")
    two = _like(t, "alice", "page:Oslo", "bob")
    mention = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]}).id
    t.run_jobs()

    assert t.retract(actor="alice", type="page-linked") == 2
    assert recipients_of(t, one) == recipients_of(t, two) == []
    assert recipients_of(t, mention) == ["bob"]
    assert t.retract(event_id=mention) == 1
    assert inbox_of(t, "bob") == []
    assert t.retract(actor="alice") == 0  # nothing left


def test_retracting_the_newest_member_of_a_bundle_shows_the_next(t: Tidings) -> None:
    for actor in ("a", "b", "c"):
        _like(t, actor, "page:X", "bob")

    t.retract(type="page-linked", actor="c", object="page:X")

    (item,) = t.notifications("bob").items
    assert (item.actor, item.count, item.actors) == ("b", 2, ["b", "a"])
    assert item.title == "X was linked by b and 1 other"
    assert t.unread_count("bob") == UnreadCount(1, "1")

    t.retract(type="page-linked", actor="a", object="page:X")
    (item,) = t.notifications("bob").items
    assert (item.actor, item.count, item.actors) == ("b", 1, ["b"])


def test_an_event_retracted_before_its_fanout_ran_delivers_nothing(t: Tidings) -> None:
    t.subscribe("carol", "*", "*")
    event = t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome",
                       "recipients": ["bob"]})

    assert t.retract(type="page-linked", actor="alice", object="page:Rome") == 0
    t.run_jobs()

    assert recipients_of(t, event.id) == []
    assert t.counters.delivered == 0
    assert t.unread_count("bob") == UnreadCount(0, "0")
    assert jobs_by_func(t) == {}


def test_a_retraction_between_chunks_stops_the_rest(any_store_url: str) -> None:
    with open_tidings(any_store_url, chunk_size=2) as t:
        for user in ("u1", "u2", "u3", "u4", "u5", "u6"):
            t.subscribe(user, "page-linked", "page:Rome")
        event = t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome"})
        worker = t.worker()
        worker.run_once()  # fan-out: replaced by chunks
        worker.run_once()  # the first chunk delivers
        delivered = recipients_of(t, event.id)
        assert len(delivered) == 2

        assert t.retract(type="page-linked", actor="alice", object="page:Rome") == 2
        t.run_jobs()

        assert recipients_of(t, event.id) == []
        assert t.counters.delivered == 2


def test_a_later_event_of_the_same_kind_is_delivered(t: Tidings) -> None:
    _like(t, "alice", "page:Rome", "bob")
    t.retract(type="page-linked", actor="alice", object="page:Rome")

    again = _like(t, "alice", "page:Rome", "bob")  # liked again

    assert recipients_of(t, again) == ["bob"]
    assert t.unread_count("bob") == UnreadCount(1, "1")


def test_a_retraction_needs_a_field(t: Tidings) -> None:
    with pytest.raises(InvalidInput) as error:
        t.retract()
    assert error.value.field == "type"
