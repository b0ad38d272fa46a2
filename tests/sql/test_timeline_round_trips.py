"""A timeline read makes as few round trips as the work allows, on every SQL backend: on
PostgreSQL the whole read — mailbox page, floor, followees, their pulls and the reader's
mutes — is one statement, in every model (an empty page too); elsewhere the mailbox in two
(three for an empty mailbox, whose floor is read alone), a pull and the mutes besides.
Counted with SQLAlchemy's events, not timed."""

from __future__ import annotations

import pytest

from engines import open_tidings
from statements import statements
from tidings.clock import FrozenClock
from tidings.engine import Tidings


def _posts(t: Tidings, actor: str, n: int) -> list[int]:
    ids = [int(t.publish({"type": "post", "actor": actor, "object": f"page:{actor}{i}"}).id)
           for i in range(n)]
    t.run_jobs()
    return ids


def test_a_pushed_timeline_page_is_one_statement_on_postgresql(t: Tidings) -> None:
    t.follow("bob", "ann")
    t.follow("bob", "cat")
    posted = _posts(t, "ann", 3) + _posts(t, "cat", 2)
    one = t.store.backend == "postgresql"
    with statements(t) as seen:
        page = t.timeline("bob", limit=20)
    assert [e.id for e in page.items] == sorted(posted, reverse=True)
    assert len(seen) == (1 if one else 2)
    with statements(t) as seen:  # a later page (max_id) too, after max_id's event's time is
        # read by primary key (the timeline's order is by time, then id)
        page = t.timeline("bob", limit=20, max_id=posted[2])
    assert [e.id for e in page.items] == sorted(posted[:2], reverse=True)
    assert len(seen) == 1 + (1 if one else 2)
    with statements(t) as seen:  # an empty mailbox still reads its floor and followees
        assert t.timeline("dan", limit=20).items == []
    assert len(seen) == (1 if one else 3)


def test_a_follow_between_two_reads_is_seen_by_the_second(t: Tidings) -> None:
    """The followees the first statement fetched serve that read only."""
    t.follow("bob", "ann")
    first = _posts(t, "ann", 2)
    t.set_timeline_model("cat", "pull")
    pulled = _posts(t, "cat", 2)
    assert [e.id for e in t.timeline("bob").items] == sorted(first, reverse=True)
    t.follow("bob", "cat")
    assert [e.id for e in t.timeline("bob").items] == sorted(first + pulled, reverse=True)
    t.unfollow("bob", "cat")
    assert [e.id for e in t.timeline("bob").items] == sorted(first, reverse=True)


def test_a_read_merging_pulled_sources_is_one_statement_on_postgresql(t: Tidings) -> None:
    """A mailbox, two pulled sources and a mute: the read is still one statement."""
    t.follow("bob", "ann")
    t.set_timeline_model("cat", "pull")
    t.follow("bob", "cat")
    t.mute("bob", actor="dan")
    t.follow("bob", "dan")
    t.set_timeline_model("dan", "pull")
    posted = _posts(t, "ann", 2) + _posts(t, "cat", 2)
    _posts(t, "dan", 1)
    with statements(t) as seen:
        page = t.timeline("bob", limit=20)
    assert [e.id for e in page.items] == sorted(posted, reverse=True)
    assert len(seen) == (1 if t.store.backend == "postgresql" else 4)


@pytest.mark.parametrize("model", ["pull", "hybrid"])
def test_a_pull_or_hybrid_page_is_one_statement_on_postgresql(store_url: str, model: str
                                                              ) -> None:
    """Under the pull model (hybrid with every source over its threshold) the first page
    and the page after it are each one statement on PostgreSQL: followees, their newest
    posts, the merge and the page's rows at once."""
    with open_tidings(store_url, timeline_model=model, celebrity_followers=0,
                      clock=FrozenClock()) as t:
        for user in ("bob", "cat"):
            t.follow("ann", user)
            t.follow("dan", user)
        posted = [int(t.publish({"type": "post", "actor": actor,
                                 "object": f"page:{actor}{i}"}).id)
                  for i in range(13) for actor in ("bob", "cat")]
        t.run_jobs()
        newest = sorted(posted, reverse=True)
        one = t.store.backend == "postgresql"
        with statements(t) as seen:
            first = t.timeline("ann", limit=20)
        assert [e.id for e in first.items] == newest[:20]
        assert len(seen) == 1 if one else len(seen) > 1
        with statements(t) as seen:
            later = t.timeline("ann", limit=20, cursor=first.next_cursor)
        assert [e.id for e in later.items] == newest[20:]
        assert later.next_cursor is None
        assert len(seen) == 1 if one else len(seen) > 1
