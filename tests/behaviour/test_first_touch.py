"""A user who already holds notifications is not new: their first subscribe, follow,
preferences or ``add_user`` keeps what is unread unread. Only a user tidings has never seen
starts "read up to now" (Gazelle), because fan-out registers the users it delivers to."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engines import notification_rows
from servers import LiveServer, wait_for
from tidings.clock import FrozenClock
from tidings.engine import Tidings, UnreadCount

pytest_plugins = ["servers"]

FIRST_TOUCHES: dict[str, Callable[[Tidings], object]] = {
    "subscribe": lambda t: t.subscribe("bob", "page-linked", "page:X"),
    "follow": lambda t: t.follow("bob", "alice"),
    "set_preferences": lambda t: t.set_preferences("bob", {"locale": "de"}),
    "add_user": lambda t: t.add_user("bob"),
}


@pytest.mark.parametrize("touch", sorted(FIRST_TOUCHES))
def test_a_first_touch_keeps_delivered_notifications_unread(
        t: Tidings, clock: FrozenClock, touch: str) -> None:
    t.publish({"type": "mention", "actor": "alice", "object": "page:Rome", "recipients": ["bob"]})
    t.run_jobs()
    assert t.unread_count("bob") == UnreadCount(1, "1")
    clock.advance(60)

    FIRST_TOUCHES[touch](t)

    assert t.unread_count("bob") == UnreadCount(1, "1")
    assert [n.read for n in t.notifications("bob").items] == [False]


def test_delivery_registers_the_users_it_reaches_without_a_watermark(t: Tidings) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob", "carol"]})
    t.run_jobs()

    delivered_at = {key.user_id: state.created_at for key, state in notification_rows(t)}
    assert sorted(delivered_at) == ["bob", "carol"]
    with t.store.read() as tx:
        assert tx.graph.joined(["bob", "carol", "dave"]) == delivered_at
        assert tx.inbox.load_markers_many(["bob", "carol"]) == {}  # no watermark
    assert t.add_user("bob") is False  # known
    assert t.add_user("dave") is True  # genuinely new: read up to now
    with t.store.read() as tx:
        assert list(tx.inbox.load_markers_many(["bob", "carol", "dave"])) == ["dave"]


def test_putting_preferences_over_http_keeps_unread(live: LiveServer) -> None:
    with live.client() as server:
        server.publish("mention", actor="alice", recipients=["bob"])
        assert live.settled()
    with live.client(live.token("bob")) as bob:
        assert wait_for(lambda: bob.unread_count()["count"] == 1)
        bob.put_preferences({"locale": "de"})
        assert bob.unread_count()["count"] == 1
