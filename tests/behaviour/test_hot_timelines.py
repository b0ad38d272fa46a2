"""Timelines with the mailboxes in Redis / Redis Cluster, under each model: the behaviour of
``test_timeline_models.py`` (pulled parts come from the SQL events, the mailbox and its
floor from Redis)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import test_timeline_models as behaviour
from engines import TYPES, open_tidings
from tidings.clock import FrozenClock
from tidings.engine import Tidings


@pytest.fixture(params=behaviour.MODELS)
def tl(request: pytest.FixtureRequest, hot_url: str, sqlite_url: str,
       clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url,
                      types=(*TYPES, behaviour.DIARY), timeline_model=request.param,
                      celebrity_followers=1, timeline_cap=4) as t:
        yield t


CHECKS: list[Callable[[Tidings], None]] = [
    behaviour.test_posts_of_followees_newest_first,
    behaviour.test_a_follow_shows_the_followees_earlier_posts,
    behaviour.test_an_unfollow_takes_the_posts_away,
    behaviour.test_a_retracted_post_disappears,
    behaviour.test_exclusions_mutes_and_other_types_as_fan_out_has_them,
    behaviour.test_max_id_since_id_and_cursor_page_the_same,
    behaviour.test_paging_while_posts_arrive_never_skips_or_repeats,
]


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__[5:] for c in CHECKS])
def test_timelines_on_the_hot_store(tl: Tidings, check: Callable[[Tidings], None]) -> None:
    check(tl)


@pytest.mark.parametrize("how", behaviour.PULLED)
def test_a_follow_of_a_pulled_source_writes_only_the_follow(
        how: str, hot_url: str, sqlite_url: str, clock: FrozenClock) -> None:
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url, celebrity_followers=1,
                      timeline_model=behaviour.PULLED[how]) as t:
        behaviour.a_follow_of_a_pulled_source_writes_only_the_follow(t, how)
