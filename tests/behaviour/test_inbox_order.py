"""The inbox in the event's own order: a notification is dated at its event's time, not at the
time fan-out delivered it, so a post whose fan-out ran late sits at its publication. Its
delivery time still decides read state: a "read up to" mark set before it arrived leaves it
unread. On every SQL store and in memory here; on Redis and Redis Cluster in
``tests/behaviour/test_hot_inbox_order.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import TYPES, all_items, open_tidings
from test_timeline_order import NEWS
from tidings.clock import FrozenClock
from tidings.engine import Tidings, UnreadCount
from tidings.jobs.worker import Worker


def late_and_on_time(t: Tidings, clock: FrozenClock) -> None:
    """A news item, then a minute later a post whose fan-out runs first, then a minute later
    bob reads up to the post: the news item is delivered after that, dated before it."""
    clock.advance(60)
    t.publish({"type": "news", "actor": "ann", "object": "news:late"})
    clock.advance(60)
    t.publish({"type": "post", "actor": "ann", "object": "blog:on-time"})
    Worker(t.job_context, t.handlers).drain(1)  # one job: the post's fan-out
    clock.advance(60)
    (on_time,) = all_items(t, "bob")
    assert on_time.object == "blog:on-time"
    t.mark_read_up_to("bob", on_time.id)
    clock.advance(60)
    t.run_jobs()


def check(t: Tidings, clock: FrozenClock) -> None:
    t.follow("bob", "ann")
    late_and_on_time(t, clock)

    items = all_items(t, "bob")
    assert [(n.object, n.read) for n in items] == [("blog:on-time", True),
                                                   ("news:late", False)]
    assert t.unread_count("bob") == UnreadCount(1, "1")


@pytest.fixture
def on_store(any_store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(any_store_url, clock=clock, types=(*TYPES, NEWS)) as t:
        yield t


def test_a_late_delivery_sits_at_its_publication_and_stays_unread(
        on_store: Tidings, clock: FrozenClock) -> None:
    check(on_store, clock)
