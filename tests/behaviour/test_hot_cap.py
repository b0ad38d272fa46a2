"""The per-user cap on the Redis hot store (Jiepang's): it keeps the newest N by time
(created_at, then event id), never by event id, so back-filled history — imported later, so
with higher ids, but older — never evicts newer live items; it keeps at least N and about a
margin more (``tidings.domain.inboxcap``), as on SQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from redis.cluster import RedisCluster

from engines import open_tidings
from redis_servers import client_of
from test_inbox_cap import CAP, MOST, OLD, _history, _live
from tidings.clock import FrozenClock, parse_rfc3339
from tidings.engine import Tidings

LIVE_FROM = parse_rfc3339("2023-11-01T00:00:00Z")  # every live item is newer, history older


@pytest.fixture
def capped(hot_url: str, sqlite_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url, inbox_cap=CAP) as t:
        yield t


def _kept(t: Tidings, user: str) -> list[tuple[int, int]]:
    """(created_at, event id) of the user's notifications, newest first, as listed."""
    return [(parse_rfc3339(n.created_at), int(n.id))
            for n in t.notifications(user, limit=100).items]


def _history_kept(kept: list[tuple[int, int]], imported: int) -> list[int]:
    """The dates of the history items kept, checked to be the newest of the ``imported``
    (item i is dated ``OLD`` + i seconds), listed after every live item."""
    dates = [created for created, _ in kept if created < LIVE_FROM]
    assert kept[len(kept) - len(dates):] == [k for k in kept if k[0] < LIVE_FROM]
    assert dates == [OLD + i * 1_000_000 for i in range(imported - 1,
                                                         imported - 1 - len(dates), -1)]
    return dates


def test_back_filled_history_never_evicts_newer_live_items(capped: Tidings,
                                                          clock: FrozenClock) -> None:
    _live(capped, clock, 30, 0)
    live_newest = _kept(capped, "bob")
    assert CAP <= len(live_newest) <= MOST
    assert live_newest[:CAP] == _kept(capped, "carol")[:CAP]  # the same live events
    _history(capped, 25)  # older, with higher ids than every live event
    kept = _kept(capped, "bob")
    assert CAP <= len(kept) <= MOST and kept[:CAP] == live_newest[:CAP]
    _history_kept(kept, 25)
    _live(capped, clock, 5, 30)
    kept = _kept(capped, "bob")
    assert CAP <= len(kept) <= MOST and kept == sorted(kept, reverse=True)
    assert kept[:5] == _kept(capped, "carol")[:5]  # the newest live ones came in on top
    assert kept[5:CAP] == live_newest[:CAP - 5]


def test_the_oldest_by_time_go_when_history_fills_the_cap(capped: Tidings,
                                                         clock: FrozenClock) -> None:
    _live(capped, clock, 10, 0)
    live = _kept(capped, "bob")
    assert len(live) == 10
    _history(capped, 15)  # 25 rows: the oldest history items go, not the first live ones
    kept = _kept(capped, "bob")
    assert CAP <= len(kept) <= 25 and kept[:10] == live
    assert len(_history_kept(kept, 15)) == len(kept) - 10
    _live(capped, clock, 5, 10)
    kept = _kept(capped, "bob")
    assert CAP <= len(kept) <= 30 and kept[5:15] == live
    assert len(_history_kept(kept, 15)) == len(kept) - 15


def test_history_newer_than_some_items_keeps_its_place_by_time(capped: Tidings,
                                                               clock: FrozenClock) -> None:
    _history(capped, 10)
    _live(capped, clock, 15, 0)
    kept = _kept(capped, "bob")
    assert CAP <= len(kept) <= 25
    # the history items kept are its newest, after the 15 live ones
    assert len(_history_kept(kept, 10)) == len(kept) - 15


def test_the_holders_entries_of_trimmed_rows_go_with_their_events(
        capped: Tidings, clock: FrozenClock, hot_url: str) -> None:
    """A trim in a unit that also delivers runs as a script after those deliveries, leaving
    the trimmed rows' entries in their events' holders index; retracting the events finds
    them without rows and drops them, so no event's index outlives its notifications."""
    _live(capped, clock, 40, 0)  # ten deliveries a unit: trims among them
    assert CAP <= len(_kept(capped, "bob")) <= MOST
    server, prefix = hot_url.split("?prefix=")
    client = client_of(server)
    try:
        assert capped.retract(actor="alice") > 0
        capped.run_jobs()
        assert _kept(capped, "bob") == [] and _kept(capped, "carol") == []
        left = [k for node in _nodes(client)
                for k in node.scan_iter(match=f"{prefix}{{e:*}}:u", count=1000)]
        assert left == []
    finally:
        client.close()


def _nodes(client: Any) -> list[Any]:
    if isinstance(client, RedisCluster):
        return [client.get_redis_connection(node) for node in client.get_primaries()]
    return [client]
