"""Retention: a per-user inbox cap kept by every delivery (and by the trim job, which keeps
timelines under theirs), and an age limit kept by the retention job; neither on a read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import (
    TYPES,
    enqueue,
    event_ids,
    inbox_of,
    jobs_by_func,
    keys_of,
    open_tidings,
    table_rows,
)
from tidings.clock import FrozenClock
from tidings.domain.types import EventType
from tidings.engine import Tidings, UnreadCount
from tidings.fanout.specs import RETENTION, TRIM
from tidings.jobs.model import JobSpec

DAY = 86_400
CAP = 3
LONG_LIVED = EventType(name="long-lived", retention_days=3, audience=("recipients",))


@pytest.fixture
def t(any_store_url: str, clock: FrozenClock,
      monkeypatch: pytest.MonkeyPatch) -> Iterator[Tidings]:
    with open_tidings(any_store_url, clock=clock, inbox_cap=CAP, retention_days=1,
                      types=(*TYPES, LONG_LIVED)) as tidings:
        yield tidings


def _mentions(t: Tidings, user: str, objects: list[str]) -> list[str]:
    ids = []
    for obj in objects:
        ids.append(t.publish({"type": "mention", "actor": "alice", "object": obj,
                              "recipients": [user]}).id)
        t.run_jobs()
    return ids


def _trim(t: Tidings, user: str) -> None:
    enqueue(t, JobSpec(TRIM, {"user": user}, unique_key=f"trim:{user}", priority=9))


# -- the inbox cap ---------------------------------------------------------------------------

def test_the_cap_is_kept_by_each_delivery(t: Tidings) -> None:
    ids = _mentions(t, "bob", ["page:1", "page:2", "page:3", "page:4", "page:5"])
    _mentions(t, "carol", ["page:1", "page:2", "page:3", "page:4"])

    assert [n.id for n in t.notifications("bob").items] == [ids[4], ids[3], ids[2]]
    assert t.unread_count("bob") == UnreadCount(CAP, str(CAP))
    assert len(inbox_of(t, "carol")) == CAP
    assert len(event_ids(t)) == 9  # the events themselves stay
    assert t.queue.stats()["queued"] == 0  # no background job was needed


def test_removals_do_not_make_the_cap_delete_too_much(t: Tidings) -> None:
    ids = _mentions(t, "bob", ["page:1", "page:2", "page:3"])
    t.retract(event_id=ids[0])
    t.retract(event_id=ids[1])
    more = _mentions(t, "bob", ["page:4", "page:5"])  # the size bound may say 5: it is 3
    assert [n.id for n in t.notifications("bob").items] == [more[1], more[0], ids[2]]
    last = _mentions(t, "bob", ["page:6"])
    assert [n.id for n in t.notifications("bob").items] == [last[0], more[1], more[0]]


def test_a_trim_under_the_cap_removes_nothing(t: Tidings) -> None:
    _mentions(t, "bob", ["page:1", "page:2"])
    _trim(t, "bob")
    t.run_jobs()

    assert len(inbox_of(t, "bob")) == 2


def test_timeline_pushes_keep_the_cap_without_jobs(any_store_url: str,
                                                   clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock, inbox_cap=CAP, timeline_cap=2) as t:
        t.follow("bob", "alice")
        t.publish_many([{"type": "post", "actor": "alice", "object": f"blog:{i}"}
                        for i in range(5)])
        t.run_jobs()

        with t.store.read() as tx:  # the mailbox holds the newest two ...
            assert len(tx.timeline.page("bob", limit=10, before=None)) == 2
        assert len(t.timeline("bob").items) == 5  # ... older posts are read from the events
        assert len(inbox_of(t, "bob")) == CAP
        assert t.queue.stats()["queued"] == 0


def test_trimming_a_bundle_keeps_its_newest_members(t: Tidings) -> None:
    for actor in ("a", "b", "c", "d", "e"):
        t.publish({"type": "page-linked", "actor": actor, "object": "page:X",
                   "recipients": ["bob"]})
        t.run_jobs()
    _trim(t, "bob")
    t.run_jobs()

    (item,) = t.notifications("bob").items
    assert (item.actor, item.count, item.actors) == ("e", 3, ["e", "d", "c"])
    assert t.unread_count("bob") == UnreadCount(1, "1")


# -- the age limit -----------------------------------------------------------------------------

def test_the_retention_job_removes_events_past_their_age(t: Tidings, clock: FrozenClock) -> None:
    old = _mentions(t, "bob", ["page:old"])[0]
    long = t.publish({"type": "long-lived", "actor": "alice", "recipients": ["bob"]}).id
    t.run_jobs()
    clock.advance(DAY - 60)
    young = _mentions(t, "bob", ["page:young"])[0]
    clock.advance(120)  # the first mention is now a day and a minute old

    assert len(inbox_of(t, "bob")) == 3  # not on read
    t.schedule_maintenance()
    t.run_jobs()

    assert [n.id for n in t.notifications("bob").items] == [young, long]
    assert sorted(str(i) for i in event_ids(t)) == sorted([long, young])
    assert keys_of(t, [old]) == []

    clock.advance(DAY)
    t.schedule_maintenance()
    t.run_jobs()
    assert [n.id for n in t.notifications("bob").items] == [long]  # its type keeps it 3 days

    clock.advance(DAY + 60)
    t.schedule_maintenance()
    t.run_jobs()
    assert inbox_of(t, "bob") == []
    assert event_ids(t) == []
    assert t.queue.stats()["queued"] == 0


def test_retention_keeps_counts_right(t: Tidings, clock: FrozenClock) -> None:
    _mentions(t, "bob", ["page:1", "page:2"])
    clock.advance(2 * DAY)
    _mentions(t, "bob", ["page:3"])

    t.schedule_maintenance()
    t.schedule_maintenance()  # one retention job at a time (unique key)
    assert jobs_by_func(t) == {RETENTION: 1}
    t.run_jobs()

    assert t.unread_count("bob") == UnreadCount(1, "1")
    assert inbox_of(t, "bob") == [("mention", "alice", "page:3")]


def test_retention_keeps_open_bundles_while_they_have_a_base(store_url: str,
                                                            clock: FrozenClock) -> None:
    """A bundle's ``inbox_open`` row (where its newest base is, and the lock of fan-out's
    decisions for it) is no lock that retention forgets: it stays while the bundle has a base
    row and goes with the last one."""
    with open_tidings(store_url, clock=clock, retention_days=1) as t:
        for actor in ("alice", "carol"):
            t.publish({"type": "page-linked", "actor": actor, "object": "page:X",
                       "recipients": ["bob", "dave"]})
            t.run_jobs()
        assert [r["user_id"] for r in table_rows(t, "inbox_open")] == ["bob", "dave"]
        clock.advance(2 * DAY)
        t.publish({"type": "page-linked", "actor": "alice", "object": "page:Y",
                   "recipients": ["bob"]})
        t.run_jobs()
        t.schedule_maintenance()
        t.run_jobs()  # page:X's notifications expire, page:Y's stays
        opened = table_rows(t, "inbox_open")
        assert [r["user_id"] for r in opened] == ["bob"]
        t.publish({"type": "page-linked", "actor": "carol", "object": "page:Y",
                   "recipients": ["bob"]})
        t.run_jobs()
        assert [i.count for i in t.notifications("bob").items] == [2]
