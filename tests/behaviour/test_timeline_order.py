"""One order for inbox and timeline: newest by the event's own time first, ties by event id.

An imported post dated years ago sits below today's posts in the timeline as in the inbox,
whichever timeline model serves the reader, and every way of paging (``cursor``, ``max_id``,
``since_id``, all given as the items show them) walks that order without skipping or repeating.
The hot store's run of the same scenario, with ``tidings rebuild-hot-store``, is in
``tests/behaviour/test_hot_timeline_order.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from engines import TYPES, all_items, open_tidings
from tidings.clock import FrozenClock
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.importer import import_lines

MODELS = ("push", "pull", "hybrid")
# The frozen clock starts on 2023-11-14: "today" for the live posts.
OLD_POST = {"kind": "event", "type": "post", "actor": "ann", "object": "blog:2019",
            "created_at": "2019-06-01T12:00:00Z", "idempotency_key": "old-post"}
# newest first: the live posts in the order published, the 2019 one last
EXPECTED = ["blog:live3", "blog:live2", "blog:live1", "blog:2019"]
# reaches followers like ``post``, but its fan-out jobs run after every other type's
NEWS = EventType("news", category="news", priority=9, audience=("actor_followers",))


@pytest.fixture(params=MODELS)
def tl(request: pytest.FixtureRequest, any_store_url: str, clock: FrozenClock
       ) -> Iterator[Tidings]:
    # hybrid with a threshold of 1: ann, with two followers, is pulled
    with open_tidings(any_store_url, clock=clock, timeline_model=request.param,
                      celebrity_followers=1, types=(*TYPES, NEWS)) as t:
        yield t


def live_post(t: Tidings, clock: FrozenClock, name: str) -> None:
    clock.advance(60)
    t.publish({"type": "post", "actor": "ann", "object": f"blog:{name}"})
    t.run_jobs()


def timeline_of(t: Tidings, user: str, *, max_id: int | None = None,
                since_id: int | None = None) -> list[str | None]:
    return [e.object for e in t.timeline(user, limit=100, max_id=max_id,
                                         since_id=since_id).items]


def inbox_posts(t: Tidings, user: str) -> list[str | None]:
    return [n.object for n in all_items(t, user) if n.type in ("post", "news")]


def late_and_on_time(t: Tidings, clock: FrozenClock) -> list[str]:
    """A news item, then a minute later a post, whose fan-out runs first: the news item is
    delivered last. Returns the order expected of both (by publication)."""
    clock.advance(60)
    t.publish({"type": "news", "actor": "ann", "object": "news:late"})
    clock.advance(60)
    t.publish({"type": "post", "actor": "ann", "object": "blog:on-time"})
    t.run_jobs()
    return ["blog:on-time", "news:late"]


def walk(t: Tidings, user: str, *, by: str) -> list[str | None]:
    """Every page of one item, by ``next_cursor`` or by ``max_id`` = the last item's id."""
    seen: list[str | None] = []
    cursor: str | None = None
    max_id: int | None = None
    while True:
        page = t.timeline(user, limit=1, cursor=cursor, max_id=max_id)
        seen += [e.object for e in page.items]
        if page.next_cursor is None or len(seen) > 20:  # a loop: stop, the check fails
            return seen
        if by == "cursor":
            cursor = page.next_cursor
        else:
            max_id = page.items[-1].id


def test_an_imported_post_sits_at_its_date_in_inbox_and_timeline(
        tl: Tidings, clock: FrozenClock) -> None:
    for user in ("bob", "cid"):
        tl.follow(user, "ann")
    live_post(tl, clock, "live1")
    live_post(tl, clock, "live2")
    report = import_lines(tl, [json.dumps(OLD_POST)])
    assert report.errors == []
    tl.run_jobs()
    live_post(tl, clock, "live3")

    assert inbox_posts(tl, "bob") == EXPECTED
    assert timeline_of(tl, "bob") == EXPECTED  # the 2019 post has the highest id of the first 3
    assert walk(tl, "bob", by="cursor") == EXPECTED
    assert walk(tl, "bob", by="max_id") == EXPECTED
    shown = {e.object: e.id for e in tl.timeline("bob", limit=100).items}
    # since_id: what sits above that item, as the timeline shows it
    assert timeline_of(tl, "bob", since_id=shown["blog:2019"]) == EXPECTED[:3]
    assert timeline_of(tl, "bob", since_id=shown["blog:live2"]) == EXPECTED[:1]
    assert timeline_of(tl, "bob", max_id=shown["blog:live1"]) == EXPECTED[3:]


def test_a_post_delivered_late_sits_at_its_publication_in_inbox_and_timeline(
        tl: Tidings, clock: FrozenClock) -> None:
    tl.follow("bob", "ann")
    expected = late_and_on_time(tl, clock)

    assert timeline_of(tl, "bob") == expected
    assert inbox_posts(tl, "bob") == expected  # not by the time fan-out delivered it


def test_a_follow_back_fills_an_imported_post_in_its_place(
        tl: Tidings, clock: FrozenClock) -> None:
    tl.follow("cid", "ann")  # ann has a follower before the import: hybrid pulls her
    live_post(tl, clock, "live1")
    live_post(tl, clock, "live2")
    assert import_lines(tl, [json.dumps(OLD_POST)]).errors == []
    tl.run_jobs()
    live_post(tl, clock, "live3")
    tl.follow("bob", "ann")  # the back-fill (push) or the pull finds all four

    assert timeline_of(tl, "bob") == EXPECTED
    assert timeline_of(tl, "cid") == EXPECTED
    assert inbox_posts(tl, "cid") == EXPECTED


@pytest.mark.parametrize("model", ["push", "hybrid"])
def test_the_cap_keeps_the_newest_by_time_and_pages_on_below_it(
        any_store_url: str, clock: FrozenClock, model: str) -> None:
    # a mailbox of two: the 2019 post, pushed last, is its oldest entry, not its newest
    with open_tidings(any_store_url, clock=clock, timeline_model=model, timeline_cap=2,
                      celebrity_followers=5) as t:
        t.follow("bob", "ann")
        live_post(t, clock, "live1")
        live_post(t, clock, "live2")
        assert import_lines(t, [json.dumps(OLD_POST)]).errors == []
        t.run_jobs()
        live_post(t, clock, "live3")

        assert timeline_of(t, "bob") == EXPECTED
        assert walk(t, "bob", by="cursor") == EXPECTED
        assert walk(t, "bob", by="max_id") == EXPECTED
