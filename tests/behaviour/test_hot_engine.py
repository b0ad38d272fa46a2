"""The engine with its hot parts in Redis / Redis Cluster: what users see is what the SQL
store shows (the shared checks of ``test_inbox_query.py``, bundles, counts, marks)."""

from __future__ import annotations

from typing import Any

import pytest

from test_import import LIVE_LINES, live_user_imported_again
from test_inbox_newer import newer_in_list_order
from test_inbox_query import payload_conditions, query_dimensions
from tidings.clock import FrozenClock
from tidings.engine import Tidings


def test_query_dimensions(hot: Tidings, clock: FrozenClock) -> None:
    query_dimensions(hot, clock)


def test_newer_in_list_order(hot: Tidings, clock: FrozenClock) -> None:
    newer_in_list_order(hot, clock)


def test_payload_conditions(hot: Tidings, clock: FrozenClock) -> None:
    payload_conditions(hot, clock)


def test_bundles_counts_and_marks(hot: Tidings, clock: FrozenClock) -> None:
    for actor in ("a1", "a2", "a3"):
        hot.publish({"type": "page-linked", "actor": actor, "object": "page:SF",
                     "recipients": ["bob"]})
        clock.advance(1)
        hot.run_jobs()
    (item,) = hot.notifications("bob").items
    assert (item.count, item.actors, item.read) == (3, ["a3", "a2", "a1"], False)
    assert hot.unread_count("bob").count == 1
    assert hot.mark_read("bob", [item.id]) == 1
    hot.publish({"type": "page-linked", "actor": "a4", "object": "page:SF",
                 "recipients": ["bob"]})
    hot.run_jobs()
    first, second = hot.notifications("bob").items
    assert (first.count, first.read, second.count, second.read) == (1, False, 3, True)
    assert hot.mark_unread("bob", [second.id]) == 1
    assert hot.unread_count("bob").display == "2"
    assert hot.mark_all_read("bob") == 2
    assert hot.unread_count("bob").count == 0


@pytest.mark.parametrize("signed_up", [True, False], ids=["signed-up", "delivered-to"])
@pytest.mark.parametrize("line", LIVE_LINES.values(), ids=LIVE_LINES.keys())
def test_an_import_leaves_a_live_users_unread_notifications_unread(
        hot: Tidings, clock: FrozenClock, line: dict[str, Any], signed_up: bool) -> None:
    live_user_imported_again(hot, clock, line, signed_up=signed_up)
