"""Reading an inbox: items, filters, newest first, cursor paging, unread counts and bundles."""

from __future__ import annotations

from engines import all_items, inbox_of
from tidings.clock import FrozenClock, to_rfc3339
from tidings.domain.views import Filters
from tidings.engine import Tidings, UnreadCount


def _mentions(t: Tidings, user: str, count: int, actor: str = "alice") -> list[str]:
    results = t.publish_many([
        {"type": "mention", "actor": actor, "object": f"page:P{i}", "recipients": [user]}
        for i in range(count)
    ])
    t.run_jobs()
    return [r.id for r in results]


def _mixed_inbox(t: Tidings) -> None:
    """bob's inbox, oldest first: mention, message, edit, page-linked, mention."""
    t.subscribe("bob", "edit", "page:Rome")
    for event in [
        {"type": "mention", "actor": "alice", "object": "page:Rome", "recipients": ["bob"]},
        {"type": "message", "actor": "carol", "object": "talk:bob", "recipients": ["bob"]},
        {"type": "edit", "actor": "dave", "object": "page:Rome"},
        {"type": "page-linked", "actor": "erin", "object": "page:Paris", "recipients": ["bob"]},
        {"type": "mention", "actor": "frank", "object": "page:Oslo", "recipients": ["bob"]},
    ]:
        t.publish(event)
        t.run_jobs()  # live notifications are dated at delivery, and jobs run by priority


def test_an_item_carries_what_a_client_shows(t: Tidings, clock: FrozenClock) -> None:
    published = t.publish({"type": "mention", "actor": "alice", "object": "page:San_Francisco",
                           "recipients": ["bob"], "payload": {"line": 7, "text": "hi <b>"}})
    before_delivery = clock.now_us()
    t.run_jobs()
    after_delivery = clock.now_us()

    (item,) = t.notifications("bob").items
    expected = {
        "id": published.id, "type": "mention", "category": "mention", "section": "alert",
        "object": "page:San_Francisco", "actor": "alice", "actors": ["alice"], "count": 1,
        "others": 0, "title": "alice mentioned you on San Francisco", "read": False,
        "seen": False, "payload": {"line": 7, "text": "hi <b>"},
    }
    shown = item.to_dict()
    assert {key: shown[key] for key in expected} == expected
    with t.store.read() as tx:
        (row,) = tx.inbox.page("bob", Filters(), tx.inbox.load_markers("bob"), limit=10,
                               before=None)
        event = tx.events.get(int(published.id))
    # dated at its event (the inbox's order, the timeline's too), fresh from its delivery
    assert event is not None and row.created_at == event.created_at < before_delivery
    assert before_delivery < row.fresh_at < after_delivery
    assert item.created_at == to_rfc3339(row.created_at)  # in RFC 3339 UTC
    assert item.created_at.endswith("Z")


def test_the_inbox_is_newest_first_and_only_the_users_own(t: Tidings) -> None:
    _mixed_inbox(t)
    t.publish({"type": "mention", "actor": "alice", "recipients": ["carol"]})
    t.run_jobs()

    assert inbox_of(t, "bob") == [
        ("mention", "frank", "page:Oslo"),
        ("page-linked", "erin", "page:Paris"),
        ("edit", "dave", "page:Rome"),
        ("message", "carol", "talk:bob"),
        ("mention", "alice", "page:Rome"),
    ]
    assert inbox_of(t, "carol") == [("mention", "alice", None)]
    assert inbox_of(t, "nobody") == []


def test_filters_by_types_category_and_section(t: Tidings) -> None:
    _mixed_inbox(t)

    assert inbox_of(t, "bob", types=["mention"]) == [
        ("mention", "frank", "page:Oslo"), ("mention", "alice", "page:Rome")]
    assert inbox_of(t, "bob", types="edit,page-linked") == [
        ("page-linked", "erin", "page:Paris"), ("edit", "dave", "page:Rome")]
    assert inbox_of(t, "bob", category="talk") == [("message", "carol", "talk:bob")]
    assert inbox_of(t, "bob", category="edit") == [("edit", "dave", "page:Rome")]
    assert inbox_of(t, "bob", category="no-such-category") == []
    assert inbox_of(t, "bob", section="message") == [("message", "carol", "talk:bob")]
    assert [n.type for n in all_items(t, "bob", section="alert")] == [
        "mention", "page-linked", "edit", "mention"]
    assert inbox_of(t, "bob", types=["mention"], section="message") == []


def test_filters_by_unread(t: Tidings) -> None:
    _mixed_inbox(t)
    edit = all_items(t, "bob", types=["edit"])[0]
    oslo = all_items(t, "bob")[0]
    t.mark_read("bob", [edit.id, oslo.id])

    assert inbox_of(t, "bob", unread=True) == [
        ("page-linked", "erin", "page:Paris"),
        ("message", "carol", "talk:bob"),
        ("mention", "alice", "page:Rome"),
    ]
    assert inbox_of(t, "bob", unread=False) == [
        ("mention", "frank", "page:Oslo"), ("edit", "dave", "page:Rome")]
    assert inbox_of(t, "bob", unread=True, types=["mention"]) == [
        ("mention", "alice", "page:Rome")]


def test_cursor_paging_walks_the_whole_inbox_once(t: Tidings) -> None:
    ids = _mentions(t, "bob", 5)

    page1 = t.notifications("bob", limit=2)
    page2 = t.notifications("bob", limit=2, cursor=page1.next_cursor)
    page3 = t.notifications("bob", limit=2, cursor=page2.next_cursor)

    assert [n.id for n in page1.items] == [ids[4], ids[3]]
    assert [n.id for n in page2.items] == [ids[2], ids[1]]
    assert [n.id for n in page3.items] == [ids[0]]
    assert page1.next_cursor is not None and page2.next_cursor is not None
    assert page3.next_cursor is None


def test_a_full_last_page_has_no_next_cursor(t: Tidings) -> None:
    ids = _mentions(t, "bob", 4)

    page1 = t.notifications("bob", limit=2)
    page2 = t.notifications("bob", limit=2, cursor=page1.next_cursor)

    assert [n.id for n in page2.items] == [ids[1], ids[0]]
    assert page2.next_cursor is None
    assert t.notifications("bob", limit=4).next_cursor is None


def test_paging_while_notifications_arrive_neither_skips_nor_repeats(t: Tidings) -> None:
    ids = _mentions(t, "bob", 5)

    page1 = t.notifications("bob", limit=2)
    newer = _mentions(t, "bob", 3, actor="zoe")
    page2 = t.notifications("bob", limit=2, cursor=page1.next_cursor)
    _mentions(t, "bob", 2, actor="yan")
    page3 = t.notifications("bob", limit=2, cursor=page2.next_cursor)

    seen = [n.id for n in page1.items + page2.items + page3.items]
    assert seen == list(reversed(ids))
    assert page3.next_cursor is None
    # A fresh first page starts with the newest arrivals.
    top = [n.id for n in all_items(t, "bob")]
    assert len(top) == 10
    assert top[2:5] == list(reversed(newer))
    assert top[5:] == list(reversed(ids))


def test_paging_with_a_filter_follows_the_filter(t: Tidings) -> None:
    _mixed_inbox(t)
    _mentions(t, "bob", 3, actor="gina")

    page1 = t.notifications("bob", types=["mention"], limit=3)
    page2 = t.notifications("bob", types=["mention"], limit=3, cursor=page1.next_cursor)

    assert [n.actor for n in page1.items] == ["gina", "gina", "gina"]
    assert [(n.actor, n.object) for n in page2.items] == [
        ("frank", "page:Oslo"), ("alice", "page:Rome")]
    assert page2.next_cursor is None


# -- unread counts -----------------------------------------------------------------------------

def test_the_unread_count_is_capped(t: Tidings) -> None:
    assert t.unread_count("bob") == UnreadCount(0, "0")
    _mentions(t, "bob", 99)
    assert t.unread_count("bob") == UnreadCount(99, "99")
    _mentions(t, "bob", 1)
    assert t.unread_count("bob") == UnreadCount(100, "99+")
    _mentions(t, "bob", 50)
    assert t.unread_count("bob") == UnreadCount(100, "99+")  # 150 unread
    assert len(all_items(t, "bob", unread=True)) == 150  # the list itself is not capped


def test_unread_counts_filter_like_lists(t: Tidings) -> None:
    _mixed_inbox(t)

    assert t.unread_count("bob") == UnreadCount(5, "5")
    assert t.unread_count("bob", types=["mention"]) == UnreadCount(2, "2")
    assert t.unread_count("bob", types=["mention", "edit"]) == UnreadCount(3, "3")
    assert t.unread_count("bob", category="talk") == UnreadCount(1, "1")
    assert t.unread_count("bob", section="alert") == UnreadCount(4, "4")
    assert t.unread_count("carol") == UnreadCount(0, "0")


# -- bundles ---------------------------------------------------------------------------------

def _link(t: Tidings, *actors: str, page: str = "page:San_Francisco") -> None:
    for actor in actors:
        t.publish({"type": "page-linked", "actor": actor, "object": page,
                   "recipients": ["bob"]})
    t.run_jobs()


def test_echos_example_two_links_then_read_then_three_more(t: Tidings) -> None:
    _link(t, "UserA", "UserB")
    (first,) = t.notifications("bob").items
    assert (first.title, first.count, first.others) == (
        "San Francisco was linked by UserB and 1 other", 2, 1)
    assert first.actors == ["UserB", "UserA"]
    assert t.unread_count("bob") == UnreadCount(1, "1")

    t.mark_read("bob", [first.id])  # the user visits the overlay
    _link(t, "UserC", "UserD", "UserX")

    items = t.notifications("bob").items
    assert [(n.title, n.count, n.read) for n in items] == [
        ("San Francisco was linked by UserX and 2 others", 3, False),
        ("San Francisco was linked by UserB and 1 other", 2, True),
    ]
    assert items[0].actors == ["UserX", "UserD", "UserC"]
    assert t.unread_count("bob") == UnreadCount(1, "1")


def test_mark_all_read_also_closes_a_bundle(t: Tidings) -> None:
    _link(t, "UserA", "UserB")
    t.mark_all_read("bob")
    _link(t, "UserC")

    assert [(n.title, n.count, n.read) for n in t.notifications("bob").items] == [
        ("San Francisco was linked by UserC", 1, False),
        ("San Francisco was linked by UserB and 1 other", 2, True),
    ]


def test_bundles_group_by_object_and_count_distinct_actors(t: Tidings) -> None:
    _link(t, "UserA", "UserA", "UserB")
    _link(t, "UserC", page="page:Oslo")
    t.publish({"type": "mention", "actor": "UserA", "object": "page:San_Francisco",
               "recipients": ["bob"]})
    t.run_jobs()

    items = t.notifications("bob").items
    assert [(n.type, n.object, n.count, n.others, n.actors) for n in items] == [
        ("mention", "page:San_Francisco", 1, 0, ["UserA"]),
        ("page-linked", "page:Oslo", 1, 0, ["UserC"]),
        ("page-linked", "page:San_Francisco", 3, 1, ["UserB", "UserA"]),
    ]
    assert t.unread_count("bob") == UnreadCount(3, "3")


def test_a_bundle_is_one_item_when_paging(t: Tidings) -> None:
    _link(t, "UserA")
    _mentions(t, "bob", 1)
    _link(t, "UserB", "UserC")

    page1 = t.notifications("bob", limit=1)
    page2 = t.notifications("bob", limit=1, cursor=page1.next_cursor)

    assert [(n.type, n.count) for n in page1.items] == [("page-linked", 3)]
    assert [(n.type, n.count) for n in page2.items] == [("mention", 1)]
    assert page2.next_cursor is None


def test_bundles_are_per_user(t: Tidings) -> None:
    t.publish({"type": "page-linked", "actor": "UserA", "object": "page:X",
               "recipients": ["bob", "carol"]})
    t.publish({"type": "page-linked", "actor": "UserB", "object": "page:X",
               "recipients": ["bob"]})
    t.run_jobs()

    assert [(n.count, n.actors) for n in t.notifications("bob").items] == [
        (2, ["UserB", "UserA"])]
    assert [(n.count, n.actors) for n in t.notifications("carol").items] == [(1, ["UserA"])]
