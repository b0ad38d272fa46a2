"""The pure bundling rules (``tidings.domain.bundling``): which group a notification joins,
and the date it is stored with."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from tidings.domain.bundling import (
    ACTOR_SCAN,
    GROUP_ACTORS,
    Bundler,
    Summary,
    display_hash,
    join_or_start,
    summary_alone,
    summary_joined,
    summary_of,
)
from tidings.domain.readstate import Markers
from tidings.domain.views import BundleBase, Delivery

BUNDLE = "b" * 32


def base(event_id: int, created_at: int, group: str = "g" * 32) -> BundleBase:
    return BundleBase(user_id="bob", event_id=event_id, display_hash=group,
                      created_at=created_at, fresh_at=created_at, read_at=None, type="link",
                      category="link", section="alert")


def test_the_first_of_a_bundle_starts_a_group_dated_at_delivery() -> None:
    place = join_or_start(BUNDLE, 7, 1_000, None, False)
    assert (place.group, place.joins, place.created_at) == (display_hash(BUNDLE, 7), False, 1_000)


def test_a_live_notification_joins_an_unread_group_and_becomes_its_base() -> None:
    place = join_or_start(BUNDLE, 8, 2_000, base(7, 1_000), True)
    assert (place.group, place.joins, place.created_at) == ("g" * 32, True, 2_000)


def test_a_read_group_is_not_joined() -> None:
    place = join_or_start(BUNDLE, 8, 2_000, base(7, 1_000), False)
    assert (place.group, place.joins) == (display_hash(BUNDLE, 8), False)


def test_a_live_notification_dated_before_the_base_lands_just_after_it() -> None:
    # delivered by a unit that took its time before waiting for the one that wrote the base
    joined = join_or_start(BUNDLE, 8, 900, base(9, 1_000), True)
    assert (joined.joins, joined.created_at) == (True, 1_001)
    started = join_or_start(BUNDLE, 8, 900, base(9, 1_000), False)
    assert (started.joins, started.created_at) == (False, 1_001)


def test_a_backfilled_notification_never_demotes_a_newer_base() -> None:
    place = join_or_start(BUNDLE, 3, 500, base(9, 1_000), True, backfill=True)
    assert (place.group, place.joins, place.created_at) == (display_hash(BUNDLE, 3), False, 500)


def test_a_backfilled_notification_joins_an_older_unread_group_and_keeps_its_date() -> None:
    place = join_or_start(BUNDLE, 12, 1_500, base(9, 1_000), True, backfill=True)
    assert (place.group, place.joins, place.created_at) == ("g" * 32, True, 1_500)
    read = join_or_start(BUNDLE, 12, 1_500, base(9, 1_000), False, backfill=True)
    assert (read.group, read.joins) == (display_hash(BUNDLE, 12), False)


def test_a_backfilled_notification_dated_like_the_base_goes_by_event_id() -> None:
    assert join_or_start(BUNDLE, 12, 1_000, base(9, 1_000), True, backfill=True).joins
    assert not join_or_start(BUNDLE, 8, 1_000, base(9, 1_000), True, backfill=True).joins


def test_a_deliverys_rows_at_once_are_its_rows_one_by_one() -> None:
    """Delivery.rows (a fan-out's rows built from one shared mapping) equals Delivery.row."""
    delivery = Delivery(event_id=7, created_at=100, type="page-linked", category="links",
                        section="message", actor="alice", object="page:Fog",
                        bundle_hash=BUNDLE, bundled=True, fields=(("from", "Rain"),))
    users = ["bob", "carol", "dave"]
    for joined in (False, True):
        at_once = delivery.rows(users, "g" * 32, 90, joined=joined)
        assert at_once == [delivery.row(u, "g" * 32, 90, joined=joined) for u in users]
        assert [repr(r) for r in at_once] == [
            repr(delivery.row(u, "g" * 32, 90, joined=joined)) for u in users]
        assert len({id(r) for r in at_once}) == len(users)
        assert hash(at_once[0]) == hash(delivery.row("bob", "g" * 32, 90, joined=joined))


@given(st.lists(st.sampled_from(["ann", "bob", "cat", None, *(f"u{i}" for i in range(130))]),
                min_size=1, max_size=ACTOR_SCAN + 40))
def test_a_summary_kept_join_by_join_is_the_one_read_from_the_members(
        actors: list[str | None]) -> None:
    """Joins keep a group's summary exactly while it is within the scan, and give it up (the
    store reads the members) from the join that takes it past; what is kept always equals the
    summary of the members read newest first."""
    kept: Summary | None = summary_alone(actors[0])
    for n, actor in enumerate(actors[1:], start=2):
        kept = summary_joined(kept, actor)
        if n > ACTOR_SCAN:
            assert kept is None
            kept = summary_of(actors[:n][::-1])  # what the store reads instead
        assert kept == summary_of(actors[:n][::-1])
        assert kept[0] == min(n, ACTOR_SCAN) and len(kept[1]) <= GROUP_ACTORS


def test_a_summary_names_the_newest_distinct_actors_first() -> None:
    assert summary_of(["bob", None, "ann", "bob", "cat"]) == (5, ("bob", "ann", "cat"))
    assert summary_joined((2, ("ann", "bob")), "bob") == (3, ("bob", "ann"))
    assert summary_joined((2, ("ann",)), None) == (3, ("ann",))
    assert summary_joined(None, "ann") is None  # not known: the store reads the members
    assert summary_joined((ACTOR_SCAN, ("ann",)), "ann") is None
    assert summary_alone(None) == (1, ())


def _like(event_id: int, at: int, *, backfill: bool = False) -> Delivery:
    return Delivery(event_id=event_id, created_at=at, type="link", category="link",
                    section="alert", actor="ann", object="page:A", bundle_hash=BUNDLE,
                    bundled=True, backfill=backfill, delivered_at=at)


def test_a_bundler_sees_the_groups_its_earlier_decisions_made() -> None:
    bundler = Bundler({}, {})
    first = bundler.decide(_like(1, 1_000), ["bob", "cat"])
    assert [(r.display_hash, r.joined) for r in first.rows] == [
        (display_hash(BUNDLE, 1), False)] * 2
    assert first.demoted == []
    second = bundler.decide(_like(2, 1_000), ["bob"])  # dated just after the base it joins
    (row,) = second.rows
    assert (row.display_hash, row.joined, row.created_at) == (display_hash(BUNDLE, 1), True,
                                                              1_001)
    assert row.group == (2, ("ann",))
    assert second.demoted == [("bob", display_hash(BUNDLE, 1))]


def test_a_bundler_judges_a_base_under_the_users_watermarks() -> None:
    read = Bundler({("bob", BUNDLE): base(7, 1_000)}, {"bob": Markers(all=1_000)})
    (row,) = read.decide(_like(8, 2_000), ["bob"]).rows
    assert (row.display_hash, row.joined) == (display_hash(BUNDLE, 8), False)
    unread = Bundler({("bob", BUNDLE): base(7, 1_000)}, {"bob": Markers(all=999)})
    (row,) = unread.decide(_like(8, 2_000), ["bob"]).rows
    assert (row.display_hash, row.joined) == ("g" * 32, True)


def test_a_type_that_never_bundles_starts_a_group_each_time() -> None:
    bundler = Bundler({("bob", BUNDLE): base(7, 1_000)}, {})
    never = replace(_like(8, 2_000), bundled=False)
    decided = bundler.decide(never, ["bob"])
    assert [(r.display_hash, r.joined) for r in decided.rows] == [
        (display_hash(BUNDLE, 8), False)]
    assert decided.demoted == []
