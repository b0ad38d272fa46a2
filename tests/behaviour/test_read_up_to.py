"""Gazelle's read-up-to-id witness: everything at or below one notification's place in the inbox
becomes read through one watermark row (no notification row is updated), and one recipient can
delete a notification without touching anyone else's."""

from __future__ import annotations

import json

import pytest

from engines import all_items, notification_rows
from test_live_updates import Heard
from tidings.clock import FrozenClock
from tidings.engine import Tidings, UnreadCount
from tidings.exceptions import NotFound
from tidings.importer import import_lines


def _mentions(t: Tidings, clock: FrozenClock, count: int, to: tuple[str, ...] = ("bob",)
              ) -> list[str]:
    ids = []
    for i in range(count):
        ids.append(t.publish({"type": "mention", "actor": "alice", "object": f"page:{i}",
                              "recipients": list(to)}).id)
        t.run_jobs()
        clock.advance(60)
    return ids


def _read(t: Tidings, user: str = "bob") -> dict[str, bool]:
    return {n.id: n.read for n in all_items(t, user)}


def test_read_up_to_a_notification_writes_one_watermark(t: Tidings, clock: FrozenClock) -> None:
    ids = _mentions(t, clock, 5)

    assert t.mark_read_up_to("bob", ids[2]) == 3

    assert _read(t) == {ids[4]: False, ids[3]: False, ids[2]: True, ids[1]: True, ids[0]: True}
    assert t.unread_count("bob") == UnreadCount(2, "2")
    # no notification row was marked: one watermark holds the place
    assert [state.read_at for _, state in notification_rows(t)] == [None] * 5
    with t.store.read() as tx:
        markers = tx.inbox.load_markers("bob")
    assert markers.position is not None and markers.position[2] == int(ids[2])
    assert markers.all == 0
    assert t.notifications("bob", unread=True).items[-1].id == ids[3]


def test_later_notifications_and_marked_unread_ones_are_unread(
        t: Tidings, clock: FrozenClock) -> None:
    ids = _mentions(t, clock, 3)
    t.mark_read_up_to("bob", ids[2])
    later = _mentions(t, clock, 1)
    t.mark_unread("bob", [ids[0]])

    assert _read(t) == {later[0]: False, ids[2]: True, ids[1]: True, ids[0]: False}
    assert t.unread_count("bob") == UnreadCount(2, "2")


def test_going_back_keeps_what_was_read_and_reads_what_was_unread_again(
        t: Tidings, clock: FrozenClock) -> None:
    ids = _mentions(t, clock, 5)
    t.mark_read_up_to("bob", ids[3])
    t.mark_unread("bob", [ids[0], ids[2]])
    assert t.unread_count("bob") == UnreadCount(3, "3")

    assert t.mark_read_up_to("bob", ids[1]) == 1  # ids[0], unread again, is read again

    assert _read(t) == {ids[4]: False, ids[3]: True, ids[2]: False, ids[1]: True,
                        ids[0]: True}
    t.mark_read_up_to("bob", ids[4])
    assert t.unread_count("bob") == UnreadCount(0, "0")


def test_the_position_is_by_time_not_by_id(t: Tidings, clock: FrozenClock) -> None:
    live = _mentions(t, clock, 2)
    assert import_lines(t, [json.dumps({
        "kind": "event", "type": "mention", "actor": "old", "recipients": ["bob"],
        "created_at": "2020-01-01T00:00:00Z", "idempotency_key": "old"})]).errors == []
    t.run_jobs()
    (old,) = [n.id for n in all_items(t, "bob") if n.actor == "old"]
    assert int(old) > int(live[1])  # a higher id, an older date

    t.mark_read_up_to("bob", live[0])

    assert _read(t) == {live[1]: False, live[0]: True, old: True}


def test_a_bundle_is_read_when_its_newest_member_is_covered(
        t: Tidings, clock: FrozenClock) -> None:
    links = []
    for actor in ("ann", "ben", "cat"):
        links.append(t.publish({"type": "page-linked", "actor": actor, "object": "page:X",
                                "recipients": ["bob"]}).id)
        t.run_jobs()
        clock.advance(60)
    t.mark_read_up_to("bob", links[1])
    assert [(n.id, n.count, n.read) for n in t.notifications("bob").items] == [
        (links[2], 3, False)]
    t.mark_read_up_to("bob", links[2])
    assert [(n.id, n.read) for n in t.notifications("bob").items] == [(links[2], True)]


def test_read_up_to_needs_a_notification_of_the_user(t: Tidings, clock: FrozenClock) -> None:
    (mine,) = _mentions(t, clock, 1)
    (theirs,) = _mentions(t, clock, 1, to=("carol",))
    with pytest.raises(NotFound):
        t.mark_read_up_to("bob", theirs)
    with pytest.raises(NotFound):
        t.mark_read_up_to("bob", "999999")
    assert t.unread_count("bob") == UnreadCount(1, "1")
    assert mine


def test_deleting_removes_one_recipients_notification_only(
        t: Tidings, clock: FrozenClock) -> None:
    ids = _mentions(t, clock, 2, to=("bob", "carol"))

    t.delete_notification("bob", ids[0])

    assert [n.id for n in all_items(t, "bob")] == [ids[1]]
    assert [n.id for n in all_items(t, "carol")] == [ids[1], ids[0]]
    assert t.unread_count("bob") == UnreadCount(1, "1")
    with pytest.raises(NotFound):
        t.delete_notification("bob", ids[0])
    assert t.get_event(ids[0]).retracted_at is None  # the event itself stays


def test_deleting_a_bundles_newest_member_repairs_the_bundle(
        t: Tidings, clock: FrozenClock) -> None:
    links = []
    for actor in ("ann", "ben", "cat"):
        links.append(t.publish({"type": "page-linked", "actor": actor, "object": "page:X",
                                "recipients": ["bob", "carol"]}).id)
        t.run_jobs()
        clock.advance(60)

    t.delete_notification("bob", links[2])

    (item,) = t.notifications("bob").items
    assert (item.id, item.count, item.actors, item.read) == (links[1], 2, ["ben", "ann"], False)
    assert [(n.id, n.count) for n in t.notifications("carol").items] == [(links[2], 3)]
    assert t.unread_count("bob") == UnreadCount(1, "1")


def test_live_listeners_hear_of_both(t: Tidings, clock: FrozenClock) -> None:
    ids = _mentions(t, clock, 2)
    heard = Heard()
    t.watch("bob", heard)
    t.mark_read_up_to("bob", ids[0])
    assert heard.wait_for(1)
    t.delete_notification("bob", ids[1])
    assert heard.wait_for(2)
