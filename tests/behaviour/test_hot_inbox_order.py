"""``test_inbox_order.py`` on Redis and Redis Cluster: a notification delivered late sits
at its event's time in the inbox and stays unread under a mark set before it arrived."""

from __future__ import annotations

from engines import TYPES, open_tidings
from test_inbox_order import check
from test_timeline_order import NEWS
from tidings.clock import FrozenClock


def test_a_late_delivery_sits_at_its_publication_and_stays_unread(
        hot_url: str, sqlite_url: str, clock: FrozenClock) -> None:
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url,
                      types=(*TYPES, NEWS)) as t:
        check(t, clock)
