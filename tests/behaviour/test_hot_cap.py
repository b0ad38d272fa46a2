"""The per-user hard cap on the Redis hot store (Jiepang's): it keeps the newest N by time
(created_at, then event id), never by event id, so back-filled history — imported later, so
with higher ids, but older — never evicts newer live items; and it holds after every delivery."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import open_tidings
from test_inbox_cap import CAP, OLD, _history, _live
from tidings.clock import FrozenClock, parse_rfc3339
from tidings.engine import Tidings


@pytest.fixture
def capped(hot_url: str, sqlite_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url, inbox_cap=CAP) as t:
        yield t


def _kept(t: Tidings, user: str) -> list[tuple[int, int]]:
    """(created_at, event id) of the user's notifications, newest first, as listed."""
    return [(parse_rfc3339(n.created_at), int(n.id))
            for n in t.notifications(user, limit=100).items]


def test_back_filled_history_never_evicts_newer_live_items(capped: Tidings,
                                                          clock: FrozenClock) -> None:
    _live(capped, clock, 30, 0)
    live_newest = _kept(capped, "bob")
    assert len(live_newest) == CAP
    _history(capped, 25)  # older, with higher ids than every live event
    assert _kept(capped, "bob") == live_newest
    assert all(created > OLD for created, _ in _kept(capped, "bob"))
    _live(capped, clock, 5, 30)
    kept = _kept(capped, "bob")
    assert len(kept) == CAP and kept == sorted(kept, reverse=True)
    assert kept[:5] == _kept(capped, "carol")[:5]  # the newest live ones came in on top


def test_the_oldest_by_time_go_when_history_fills_the_cap(capped: Tidings,
                                                         clock: FrozenClock) -> None:
    _live(capped, clock, 10, 0)
    live = _kept(capped, "bob")
    _history(capped, 15)  # 25 rows: the five oldest history items go, not the first live ones
    kept = _kept(capped, "bob")
    assert len(kept) == CAP and kept[:10] == live
    assert [c for c, _ in kept[10:]] == [OLD + i * 1_000_000 for i in range(14, 4, -1)]
    _live(capped, clock, 5, 10)
    kept = _kept(capped, "bob")
    assert len(kept) == CAP and kept[5:15] == live
    assert [c for c, _ in kept[15:]] == [OLD + i * 1_000_000 for i in range(14, 9, -1)]


def test_history_newer_than_some_items_keeps_its_place_by_time(capped: Tidings,
                                                               clock: FrozenClock) -> None:
    _history(capped, 10)
    _live(capped, clock, 15, 0)
    kept = _kept(capped, "bob")
    assert len(kept) == CAP
    assert sum(1 for created, _ in kept if created < parse_rfc3339("2023-11-01T00:00:00Z")) == 5
    # the five history items kept are its newest five
    assert [e for c, e in kept if c < parse_rfc3339("2023-11-01T00:00:00Z")] == sorted(
        (e for c, e in kept if c < parse_rfc3339("2023-11-01T00:00:00Z")), reverse=True)
