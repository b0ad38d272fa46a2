"""A bundle opened (``Tidings.bundle_members``) on every store: its members newest first, each
titled as if alone and read by its own state, paged by cursor without a repeat or a gap; the
read watermarks judge each member; a notification the user does not hold is not found."""

from __future__ import annotations

import pytest

from tidings.clock import FrozenClock
from tidings.engine import Tidings
from tidings.exceptions import InvalidInput, NotFound


def _links(t: Tidings, clock: FrozenClock, actors: list[str], *, page: str = "San_Francisco"
           ) -> list[str]:
    ids = []
    for actor in actors:
        clock.advance(1)
        ids.append(t.publish({"type": "page-linked", "actor": actor, "object": f"page:{page}",
                              "recipients": ["bob", "carol"], "payload": {"by": actor}}).id)
    t.run_jobs()
    return ids


def test_a_bundle_opens_to_its_members_each_titled_alone(t: Tidings,
                                                         clock: FrozenClock) -> None:
    ids = _links(t, clock, ["alice", "dave", "erin"])
    (item,) = t.notifications("bob").items
    assert item.title == "San Francisco was linked by erin and 2 others"
    members = t.bundle_members("bob", item.id).items
    assert [m.id for m in members] == ids[::-1]
    assert [m.title for m in members] == [
        f"San Francisco was linked by {a}" for a in ("erin", "dave", "alice")]
    assert [m.payload for m in members] == [{"by": a} for a in ("erin", "dave", "alice")]
    assert all(not m.read for m in members)
    # any member's id opens the group; pages follow the cursor to the end
    seen, cursor = [], None
    while True:
        page = t.bundle_members("bob", ids[0], limit=2, cursor=cursor)
        seen += [m.id for m in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ids[::-1]


def test_each_member_is_read_by_the_watermarks_and_its_own_marks(t: Tidings,
                                                                 clock: FrozenClock) -> None:
    ids = _links(t, clock, ["alice", "dave"])
    t.mark_read_up_to("bob", ids[0])  # the older member's place: it alone is below the mark
    assert [m.read for m in t.bundle_members("bob", ids[1]).items] == [False, True]
    t.mark_read("bob", [ids[1]])
    assert [m.read for m in t.bundle_members("bob", ids[1]).items] == [True, True]
    assert [m.read for m in t.bundle_members("carol", ids[1]).items] == [False, False]


def test_a_notification_of_another_user_or_none_is_not_found(t: Tidings,
                                                             clock: FrozenClock) -> None:
    (event_id,) = _links(t, clock, ["alice"])
    with pytest.raises(NotFound):
        t.bundle_members("alice", event_id)  # the actor is not told
    with pytest.raises(NotFound):
        t.bundle_members("bob", str(int(event_id) + 100))
    with pytest.raises(InvalidInput):
        t.bundle_members("bob", "x1")
    with pytest.raises(InvalidInput):
        t.bundle_members("bob", event_id, limit=0)
