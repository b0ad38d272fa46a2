"""Timelines under the three models (push, pull, hybrid) and the per-source override: one read
API — the same items, order and cursors whichever model wrote them —, follows that back-fill,
unfollows and retractions that take posts away, the filters fan-out applies, and the cap."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engines import TYPES, open_tidings
from tidings.clock import FrozenClock
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.exceptions import ConfigError, InvalidInput

MODELS = ("push", "pull", "hybrid")
DIARY = EventType("diary", audience=("actor_followers",), privacy="group:friends")


@pytest.fixture(params=MODELS)
def model(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def tl(any_store_url: str, clock: FrozenClock, model: str) -> Iterator[Tidings]:
    # hybrid with a threshold of 1: a source with two followers is pulled
    with open_tidings(any_store_url, clock=clock, types=(*TYPES, DIARY),
                      timeline_model=model, celebrity_followers=1) as t:
        yield t


def post(t: Tidings, actor: str, n: int = 1, **fields: Any) -> list[int]:
    ids = [int(t.publish({"type": "post", "actor": actor, "object": f"blog:{actor}{i}",
                          **fields}).id) for i in range(n)]
    t.run_jobs()
    return ids


def ids(t: Tidings, user: str, **kw: Any) -> list[int]:
    return [e.id for e in t.timeline(user, limit=100, **kw).items]


def walk(t: Tidings, user: str, limit: int, **kw: Any) -> list[int]:
    """Every page by cursor."""
    seen: list[int] = []
    cursor = None
    while True:
        page = t.timeline(user, limit=limit, cursor=cursor, **kw)
        seen += [e.id for e in page.items]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_posts_of_followees_newest_first(tl: Tidings) -> None:
    tl.follow("bob", "ann")
    tl.follow("bob", "cat")
    tl.follow("dan", "ann")
    a = post(tl, "ann", 2)
    c = post(tl, "cat", 1)
    post(tl, "eve", 1)  # not followed
    assert ids(tl, "bob") == sorted(a + c, reverse=True)
    entry = tl.timeline("bob").items[0]
    assert (entry.type, entry.actor, entry.object) == ("post", "cat", "blog:cat0")


def test_pages_where_one_followee_posts_most(tl: Tidings) -> None:
    """A followee giving a page more posts than the others (the pull's first pass reads a
    few of each followee's newest, a second pass the rest of the one that may hold more),
    with retracted posts among them: every page is the newest of what is left."""
    tl.follow("bob", "ann")
    tl.follow("bob", "cat")
    tl.follow("bob", "dan")
    every: list[int] = []
    for burst in (9, 1, 12, 2, 7):
        every += post(tl, "ann", burst)
        every += post(tl, "cat" if burst % 2 else "dan", 1)
    gone = every[3::5]
    for event_id in gone:
        tl.retract(event_id=event_id)
    tl.run_jobs()
    left = sorted(set(every) - set(gone), reverse=True)
    for limit in (1, 4, 5, 6, 11, 100):
        assert walk(tl, "bob", limit) == left
    assert ids(tl, "bob", max_id=left[6]) == left[7:]


def test_a_page_of_more_followees_than_it_holds(tl: Tidings) -> None:
    """More followees than a page holds, one of them posting far more than the rest, some
    posts retracted: every page is the newest of what is left (MariaDB reads the page above
    a floor taken from each followee's newest post; the page's own bounds apply too)."""
    followees = [f"f{i:02d}" for i in range(25)]
    for other in followees:
        tl.follow("bob", other)
    events = [{"type": "post", "actor": other, "object": f"blog:{other}-{n}"}
              for rounds in range(3) for i, other in enumerate(followees)
              for n in range(1 + (i % 3) * rounds)]
    events += [{"type": "post", "actor": "f07", "object": f"blog:burst{n}"} for n in range(30)]
    every = [int(r.id) for r in tl.publish_many(events)]
    tl.run_jobs()
    gone = every[5::7]
    for event_id in gone:
        tl.retract(event_id=event_id)
    tl.run_jobs()
    left = sorted(set(every) - set(gone), reverse=True)
    for limit in (1, 19, 20, 21, 50):
        assert walk(tl, "bob", limit) == left
    assert ids(tl, "bob", max_id=left[10], since_id=left[40]) == left[11:40]
    assert ids(tl, "bob", since_id=left[3]) == left[:3]


def test_a_follow_shows_the_followees_earlier_posts(tl: Tidings) -> None:
    earlier = post(tl, "ann", 30)
    assert ids(tl, "bob") == []
    tl.follow("bob", "ann")
    assert ids(tl, "bob") == sorted(earlier, reverse=True)[:30]
    later = post(tl, "ann", 1)
    assert ids(tl, "bob") == sorted(earlier + later, reverse=True)


def test_an_unfollow_takes_the_posts_away(tl: Tidings) -> None:
    tl.follow("bob", "ann")
    tl.follow("bob", "cat")
    post(tl, "ann", 3)
    c = post(tl, "cat", 2)
    tl.unfollow("bob", "ann")
    assert ids(tl, "bob") == sorted(c, reverse=True)


def test_a_retracted_post_disappears(tl: Tidings) -> None:
    tl.follow("bob", "ann")
    tl.follow("cat", "ann")
    kept, gone = post(tl, "ann", 2)
    tl.retract(event_id=gone)
    assert ids(tl, "bob") == ids(tl, "cat") == [kept]


def test_exclusions_mutes_and_other_types_as_fan_out_has_them(tl: Tidings) -> None:
    tl.follow("bob", "ann")
    tl.follow("cat", "ann")
    shown = post(tl, "ann", 1)
    post(tl, "ann", 1, exclude=["bob"])
    tl.mute("bob", object="blog:ann7")
    post(tl, "ann", 8)  # blog:ann0..7: the last one muted by object for bob
    tl.publish({"type": "mention", "actor": "ann", "object": "x", "recipients": ["bob"]})
    tl.run_jobs()
    bob = tl.timeline("bob", limit=100).items
    assert shown[0] in [e.id for e in bob]
    assert all(e.type == "post" for e in bob)
    assert [e.object for e in bob].count("blog:ann7") == 0
    assert len(bob) == 1 + 7
    assert len(ids(tl, "cat")) == 10


def test_a_privacy_rule_applies_to_pulled_posts_too(tl: Tidings) -> None:
    tl.add_member("friends", "bob")
    for user in ("bob", "cat"):
        tl.follow(user, "ann")
    diary = int(tl.publish({"type": "diary", "actor": "ann", "object": "d:1"}).id)
    tl.run_jobs()
    assert ids(tl, "bob") == [diary]
    assert ids(tl, "cat") == []


def test_max_id_since_id_and_cursor_page_the_same(tl: Tidings) -> None:
    tl.follow("bob", "ann")
    tl.follow("bob", "cat")
    every = sorted(post(tl, "ann", 5) + post(tl, "cat", 4), reverse=True)
    assert walk(tl, "bob", 2) == every
    assert ids(tl, "bob", max_id=every[3]) == every[4:]
    assert ids(tl, "bob", since_id=every[3]) == every[:3]
    assert ids(tl, "bob", max_id=every[1], since_id=every[5]) == every[2:5]
    assert walk(tl, "bob", 2, since_id=every[6]) == every[:6]
    first = tl.timeline("bob", limit=3)
    assert first.next_cursor is not None
    # a cursor and max_id together: the lower bound wins
    assert ids(tl, "bob", cursor=first.next_cursor, max_id=every[6]) == every[7:]
    assert ids(tl, "bob", cursor=first.next_cursor, max_id=every[0]) == every[3:]
    with pytest.raises(InvalidInput):
        tl.timeline("bob", max_id="x")


def test_paging_while_posts_arrive_never_skips_or_repeats(tl: Tidings) -> None:
    tl.follow("bob", "ann")
    tl.follow("bob", "cat")
    before = post(tl, "ann", 4) + post(tl, "cat", 3)
    page = tl.timeline("bob", limit=3)
    seen = [e.id for e in page.items]
    while page.next_cursor is not None:
        post(tl, "ann", 1)
        post(tl, "cat", 1)
        page = tl.timeline("bob", limit=3, cursor=page.next_cursor)
        seen += [e.id for e in page.items]
    assert seen == sorted(before, reverse=True)


def test_the_cap_keeps_the_newest_and_older_pages_are_pulled(any_store_url: str,
                                                             clock: FrozenClock,
                                                             model: str) -> None:
    with open_tidings(any_store_url, clock=clock, timeline_model=model,
                      timeline_cap=4) as t:
        early = post(t, "ann", 6)
        t.follow("bob", "ann")  # back-fill: the newest 4, older ones pulled
        t.follow("bob", "cat")
        later = post(t, "ann", 3) + post(t, "cat", 3)  # pushes over the cap
        every = sorted(early + later, reverse=True)
        assert walk(t, "bob", 3) == every
        assert walk(t, "bob", 4) == every
        assert ids(t, "bob") == every
        assert ids(t, "bob", max_id=every[5], since_id=every[9]) == every[6:9]


def test_the_cap_holds_in_the_mailbox(any_store_url: str, clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock, timeline_cap=3) as t:
        t.follow("bob", "ann")
        every = sorted(post(t, "ann", 7), reverse=True)
        t.follow("bob", "cat")  # a back-fill of nothing
        with t.store.read() as tx:
            held = [e.id for e in tx.timeline.page("bob", limit=100, before=None)]
        assert held == every[:3]
        assert ids(t, "bob") == every
        assert t.queue.stats()["queued"] == 0


def test_a_per_source_override(any_store_url: str, clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock) as t:
        t.set_timeline_model("ann", "pull")
        t.follow("bob", "ann")
        t.follow("bob", "cat")
        a = post(t, "ann", 2)
        c = post(t, "cat", 2)
        with t.store.read() as tx:
            held = [e.id for e in tx.timeline.page("bob", limit=100, before=None)]
        assert held == sorted(c, reverse=True)  # ann's posts were not pushed
        assert ids(t, "bob") == sorted(a + c, reverse=True)
        t.set_timeline_model("ann", "push")
        a2 = post(t, "ann", 1)
        t.set_timeline_model("cat", "pull")
        c2 = post(t, "cat", 1)
        t.set_timeline_model("ann", None)
        assert ids(t, "bob") == sorted(a + c + a2 + c2, reverse=True)
        with pytest.raises(InvalidInput):
            t.set_timeline_model("ann", "hybrid")


def test_followees_pulled_whole_and_from_a_cut_merge_in_one_read(any_store_url: str,
                                                                 clock: FrozenClock) -> None:
    """A pull deployment where one followee is pushed from some post on: its older posts are
    pulled below its cut, the others' whole (on PostgreSQL the two kinds are read by two
    branches of the statement, each followee by one), with and without id bounds, and with
    a mailbox that fills a page by itself."""
    with open_tidings(any_store_url, clock=clock, timeline_model="pull") as t:
        for other in ("ann", "cat", "dan"):
            t.follow("bob", other)
        early = post(t, "ann", 3) + post(t, "cat", 2) + post(t, "dan", 2)
        t.set_timeline_model("cat", "push")
        later = post(t, "cat", 4) + post(t, "ann", 1) + post(t, "dan", 1) + post(t, "cat", 3)
        every = sorted(early + later, reverse=True)
        assert ids(t, "bob") == every
        for limit in (1, 2, 3, 5):
            assert walk(t, "bob", limit) == every
            assert walk(t, "bob", limit, since_id=every[-3]) == every[:-3]
        assert ids(t, "bob", since_id=every[8]) == every[:8]
        assert ids(t, "bob", max_id=every[2], since_id=every[12]) == every[3:12]


def test_hybrid_pulls_only_sources_over_the_threshold(any_store_url: str,
                                                      clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock, timeline_model="hybrid",
                      celebrity_followers=2) as t:
        for fan in ("bob", "cat", "dan"):
            t.follow(fan, "star")
        t.follow("bob", "ann")
        s = post(t, "star", 2)
        a = post(t, "ann", 2)
        with t.store.read() as tx:
            held = [e.id for e in tx.timeline.page("bob", limit=100, before=None)]
        assert held == sorted(a, reverse=True)
        assert ids(t, "bob") == sorted(a + s, reverse=True)
        t.unfollow("dan", "star")  # back under the threshold: pushed again from now on
        s2 = post(t, "star", 1)
        assert ids(t, "bob") == sorted(a + s + s2, reverse=True)
        assert ids(t, "cat") == sorted(s + s2, reverse=True)


@pytest.mark.parametrize("before", ["pull", "hybrid"])
def test_a_deployment_turned_to_push_pulls_what_it_did_not_push(
        any_store_url: str, clock: FrozenClock, before: str) -> None:
    """Sources pulled under the earlier model (their stored state says so) stay pulled under
    push until they post again, and from that post on are read from the mailbox; a source
    that never posted is read from the mailbox alone (on PostgreSQL a push deployment's read
    looks up only the sources whose state is not "pushed from the start")."""
    with open_tidings(any_store_url, clock=clock, timeline_model=before,
                      celebrity_followers=1) as t:
        for fan in ("bob", "cat"):
            t.follow(fan, "ann")
        t.follow("bob", "dan")
        dan = post(t, "dan", 2)  # pushed under hybrid: one follower
        early = post(t, "ann", 3) + dan
    with open_tidings(any_store_url, clock=clock, timeline_model="push") as t:
        assert ids(t, "bob") == sorted(early, reverse=True)
        t.follow("bob", "eve")  # no post, no stored state
        later = post(t, "ann", 2) + post(t, "eve", 1)
        every = sorted(early + later, reverse=True)
        assert ids(t, "bob") == every
        for limit in (1, 2, 3):
            assert walk(t, "bob", limit) == every
        assert ids(t, "bob", max_id=every[1], since_id=every[-2]) == every[2:-2]
        with t.store.read() as tx:  # only the posts pushed are in the mailbox
            held = [e.id for e in tx.timeline.page("bob", limit=100, before=None)]
        assert held == sorted(later + (dan if before == "hybrid" else []), reverse=True)


def test_the_model_setting_is_checked() -> None:
    with pytest.raises(ConfigError, match="TIDINGS_TIMELINE_MODEL"):
        open_tidings("memory://bad-model", timeline_model="fan-out")


def test_a_follow_while_pulled_reads_the_posts_when_pushed_again(
        any_store_url: str, clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock, timeline_model="hybrid",
                      celebrity_followers=1) as t:
        t.follow("ann", "star")
        s = post(t, "star", 2)  # pushed: one follower
        t.follow("bob", "star")  # two followers: pulled, no post since
        t.unfollow("ann", "star")  # one again: pushed, still no post since
        assert ids(t, "bob") == sorted(s, reverse=True)
        t.set_timeline_model("star", "pull")
        t.follow("cat", "star")
        t.set_timeline_model("star", None)
        assert ids(t, "cat") == sorted(s, reverse=True)


def test_a_mute_applies_when_a_post_reaches_the_timeline(any_store_url: str,
                                                         clock: FrozenClock) -> None:
    # documented: pushed posts are filtered at fan-out, pulled ones at read
    with open_tidings(any_store_url, clock=clock) as t:
        t.set_timeline_model("cat", "pull")
        for source in ("ann", "cat"):
            t.follow("bob", source)
        a = post(t, "ann", 1)
        c = post(t, "cat", 1)
        t.mute("bob", actor="ann")
        t.mute("bob", actor="cat")
        assert ids(t, "bob") == a  # pushed before the mute: kept; pulled: hidden at once
        post(t, "ann", 1)
        post(t, "cat", 1)
        assert ids(t, "bob") == a  # after the mute: neither
        t.unmute("bob", actor="cat")
        assert ids(t, "bob") == sorted(a + c + [c[0] + 2], reverse=True)


def mailbox(t: Tidings, user: str) -> list[int]:
    with t.store.read() as tx:
        return [e.id for e in tx.timeline.page(user, limit=100, before=None)]


PULLED = {"pull": "pull", "hybrid": "hybrid", "override": "push"}  # how -> deployment model


@pytest.mark.parametrize("how", PULLED)
def test_a_follow_of_a_pulled_source_writes_only_the_follow(
        any_store_url: str, clock: FrozenClock, how: str) -> None:
    with open_tidings(any_store_url, clock=clock, celebrity_followers=1,
                      timeline_model=PULLED[how]) as t:
        a_follow_of_a_pulled_source_writes_only_the_follow(t, how)


def a_follow_of_a_pulled_source_writes_only_the_follow(t: Tidings, how: str) -> None:
    """The pull model writes only the event (the timeline seed has no mailbox under pull):
    following a pulled source puts nothing in the follower's mailbox — a source that posted
    before anyone followed it, one whose post is not fanned out yet, a celebrity under hybrid
    (threshold 1), a source overridden to pull. Its posts are read by pull, now and after it is
    pushed again (until its next post, which starts its pushed posts)."""
    if how == "override":
        t.set_timeline_model("ann", "pull")
    elif how == "hybrid":
        t.follow("zed", "ann")
    early = post(t, "ann", 3)
    waiting = int(t.publish({"type": "post", "actor": "ann", "object": "blog:w"}).id)
    t.follow("bob", "ann")
    assert mailbox(t, "bob") == []
    t.run_jobs()
    assert mailbox(t, "bob") == []
    shown = sorted([*early, waiting], reverse=True)
    assert ids(t, "bob") == shown
    t.set_timeline_model("ann", None if how == "override" else "push")
    assert ids(t, "bob") == shown  # pushed again: what it did not push is pulled
    later = post(t, "ann", 1)
    assert mailbox(t, "bob") == later
    assert ids(t, "bob") == later + shown
