"""Read and seen state: by ids, by match, all (or a scope) read by one watermark, unread again."""

from __future__ import annotations

import pytest

from engines import all_items, notification_rows
from tidings.clock import FrozenClock
from tidings.domain.readstate import Markers
from tidings.engine import Tidings, UnreadCount

USERS = ["alice", "bob", "carol", "dave", "erin"]  # everyone the tests below name


def _publish(t: Tidings, *events: dict[str, object]) -> list[str]:
    ids = []
    for event in events:
        ids.append(t.publish(event).id)
        t.run_jobs()
    return ids


def _inbox(t: Tidings) -> list[str]:
    """bob gets: mention (alice, Rome), message (carol), mention (dave, Oslo), edit (alice)."""
    return _publish(
        t,
        {"type": "mention", "actor": "alice", "object": "page:Rome", "recipients": ["bob"]},
        {"type": "message", "actor": "carol", "object": "talk:bob", "recipients": ["bob"]},
        {"type": "mention", "actor": "dave", "object": "page:Oslo", "recipients": ["bob"]},
        {"type": "edit", "actor": "alice", "object": "page:Oslo", "recipients": ["bob"]},
    )


def _read(t: Tidings, user: str = "bob") -> dict[str, bool]:
    return {n.id: n.read for n in all_items(t, user)}


def _unread_ids(t: Tidings, user: str = "bob") -> list[str]:
    return [n.id for n in all_items(t, user, unread=True)]


def _markers(t: Tidings) -> dict[str, Markers]:
    """The watermarks of every user who has any."""
    with t.store.read() as tx:
        return tx.inbox.load_markers_many(USERS)


def test_mark_read_by_ids(t: Tidings) -> None:
    ids = _inbox(t)

    assert t.mark_read("bob", [ids[0], ids[2]]) == 2
    assert t.mark_read("bob", [ids[0]]) == 0  # already read

    assert _unread_ids(t) == [ids[3], ids[1]]
    assert t.unread_count("bob") == UnreadCount(2, "2")


def test_mark_read_touches_only_the_users_own_notifications(t: Tidings) -> None:
    (shared,) = _publish(t, {"type": "mention", "actor": "alice", "recipients": ["bob", "carol"]})

    assert t.mark_read("carol", [shared]) == 1
    assert t.mark_read("erin", [shared]) == 0

    assert _read(t, "carol") == {shared: True}
    assert _read(t, "bob") == {shared: False}


def test_mark_read_of_a_bundle_member_reads_the_whole_bundle(t: Tidings) -> None:
    ids = _publish(
        t,
        {"type": "page-linked", "actor": "a", "object": "page:X", "recipients": ["bob"]},
        {"type": "page-linked", "actor": "b", "object": "page:X", "recipients": ["bob"]},
    )

    assert t.mark_read("bob", [ids[0]]) == 1  # the older, hidden member

    (item,) = t.notifications("bob").items
    assert (item.id, item.count, item.read) == (ids[1], 2, True)
    states = [state for _, state in notification_rows(t)]
    assert len(states) == 2
    assert all(state.read_at is not None for state in states)


def test_mark_all_read_writes_one_marker_and_no_notification_row(
        t: Tidings, clock: FrozenClock) -> None:
    ids = _inbox(t)
    notifications_before = notification_rows(t)
    assert _markers(t) == {}

    start = clock.now_us()
    assert t.mark_all_read("bob") == 4
    end = clock.now_us()

    assert notification_rows(t) == notifications_before
    (user, marker), = _markers(t).items()
    assert user == "bob"
    assert (marker.seen, marker.scoped) == (0, {})
    assert start < marker.all < end  # "all read up to now"
    assert _unread_ids(t) == []
    assert t.unread_count("bob") == UnreadCount(0, "0")
    assert set(_read(t)) == set(ids)

    (later,) = _publish(t, {"type": "mention", "actor": "erin", "recipients": ["bob"]})
    assert _unread_ids(t) == [later]


def test_mark_all_read_again_moves_the_same_row(t: Tidings) -> None:
    _inbox(t)
    t.mark_all_read("bob")
    first = _markers(t)["bob"].all
    _publish(t, {"type": "mention", "actor": "erin", "recipients": ["bob"]})
    notifications_before = notification_rows(t)

    assert t.mark_all_read("bob") == 1

    assert notification_rows(t) == notifications_before
    (user, marker), = _markers(t).items()
    assert (user, marker.seen, marker.scoped) == ("bob", 0, {})
    assert marker.all > first
    assert _unread_ids(t) == []


@pytest.mark.parametrize(("scope", "kwargs", "still_unread"), [
    ("type:mention", {"types": ["mention"]}, [3, 1]),
    ("category:talk", {"category": "talk"}, [3, 2, 0]),
    ("section:alert", {"section": "alert"}, [1]),
])
def test_mark_all_read_in_one_scope(t: Tidings, scope: str, kwargs: dict[str, object],
                                    still_unread: list[int]) -> None:
    ids = _inbox(t)
    notifications_before = notification_rows(t)

    t.mark_all_read("bob", **kwargs)  # type: ignore[arg-type]

    assert notification_rows(t) == notifications_before
    (user, marker), = _markers(t).items()
    assert (user, marker.all, marker.seen) == ("bob", 0, 0)
    assert [f"{kind}:{value}" for kind, value in marker.scoped] == [scope]
    assert _unread_ids(t) == [ids[i] for i in still_unread]
    assert t.unread_count("bob") == UnreadCount(len(still_unread), str(len(still_unread)))


def test_a_scoped_mark_leaves_later_notifications_unread(t: Tidings) -> None:
    _inbox(t)
    t.mark_all_read("bob", types=["mention"])

    (later,) = _publish(t, {"type": "mention", "actor": "erin", "recipients": ["bob"]})

    assert _unread_ids(t, "bob")[0] == later
    assert t.unread_count("bob", types=["mention"]) == UnreadCount(1, "1")


def test_mark_read_matching_actor_type_object(t: Tidings) -> None:
    ids = _inbox(t)

    assert t.mark_read_matching("bob", actor="alice", object="page:Oslo") == 1
    assert _unread_ids(t) == [ids[2], ids[1], ids[0]]
    assert t.mark_read_matching("bob", type="mention") == 2
    assert _unread_ids(t) == [ids[1]]
    assert t.mark_read_matching("bob", actor="nobody") == 0
    assert t.mark_read_matching("bob", actor="carol", type="message", object="talk:bob") == 1
    assert _unread_ids(t) == []


def test_mark_read_matching_stays_in_the_users_inbox(t: Tidings) -> None:
    _publish(t, {"type": "mention", "actor": "alice", "recipients": ["bob", "carol"]})

    t.mark_read_matching("bob", actor="alice")

    assert t.unread_count("bob").count == 0
    assert t.unread_count("carol").count == 1


def test_mark_unread_after_read_by_id(t: Tidings) -> None:
    ids = _inbox(t)
    t.mark_read("bob", ids)

    assert t.mark_unread("bob", [ids[1]]) == 1
    assert t.mark_unread("bob", [ids[1]]) == 0

    assert _unread_ids(t) == [ids[1]]


def test_mark_unread_an_item_older_than_the_mark_all_read_watermark(t: Tidings) -> None:
    ids = _inbox(t)
    t.mark_all_read("bob")

    assert t.mark_unread("bob", [ids[0]]) == 1

    assert _unread_ids(t) == [ids[0]]
    assert t.unread_count("bob") == UnreadCount(1, "1")
    assert [n.id for n in all_items(t, "bob")] == list(reversed(ids))  # its place is kept


def test_mark_unread_under_a_scoped_watermark(t: Tidings) -> None:
    ids = _inbox(t)
    t.mark_all_read("bob", category="mention")

    t.mark_unread("bob", [ids[2]])

    assert _unread_ids(t) == [ids[3], ids[2], ids[1]]


def test_the_seen_watermark_is_separate_from_read(t: Tidings) -> None:
    ids = _inbox(t)
    t.mark_read("bob", [ids[0]])

    t.mark_seen("bob")
    (later,) = _publish(t, {"type": "mention", "actor": "erin", "recipients": ["bob"]})

    items = all_items(t, "bob")
    assert [(n.id, n.read, n.seen) for n in items] == [
        (later, False, False),
        (ids[3], False, True),
        (ids[2], False, True),
        (ids[1], False, True),
        (ids[0], True, True),
    ]
    assert t.unread_count("bob") == UnreadCount(4, "4")  # seen is not read
    (user, marker), = _markers(t).items()
    assert (user, marker.all, marker.scoped) == ("bob", 0, {})
    assert marker.seen > 0


def test_the_badge_counts_unseen_and_opening_clears_it(t: Tidings) -> None:
    ids = _inbox(t)
    t.mark_read("bob", [ids[0]])
    assert t.unseen_count("bob") == UnreadCount(3, "3")  # nothing seen yet: every unread

    t.mark_seen("bob")  # the inbox was opened
    assert t.unseen_count("bob") == UnreadCount(0, "0")
    assert t.unread_count("bob") == UnreadCount(3, "3")  # still unread: the dots stay

    (later,) = _publish(t, {"type": "message", "actor": "erin", "recipients": ["bob"]})
    assert t.unseen_count("bob") == UnreadCount(1, "1")
    assert t.unseen_count("bob", section="message") == UnreadCount(1, "1")
    assert t.unseen_count("bob", section="alert") == UnreadCount(0, "0")
    t.mark_read("bob", [later])
    assert t.unseen_count("bob") == UnreadCount(0, "0")


def test_mark_seen_until_a_time_and_never_back(t: Tidings) -> None:
    ids = _inbox(t)
    with t.store.read() as tx:
        (second,) = tx.inbox.read_states("bob", [int(ids[1])])

    t.mark_seen("bob", until=second.fresh_at)  # seen up to the second notification
    t.mark_seen("bob", until=0)  # a watermark never moves back

    assert [(n.id, n.seen) for n in all_items(t, "bob")] == [
        (ids[3], False), (ids[2], False), (ids[1], True), (ids[0], True)]
