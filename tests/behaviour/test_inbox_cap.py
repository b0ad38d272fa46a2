"""The per-user inbox cap keeps the newest notifications by time, and holds after every
delivery (not in a sampled background job): a cap of 20 means 20 rows, whatever the write path,
and back-filled history never evicts newer live items."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from engines import open_tidings, table_rows
from tidings.clock import FrozenClock, parse_rfc3339
from tidings.engine import Tidings
from tidings.importer import import_lines

CAP = 20
OLD = parse_rfc3339("2023-01-01T00:00:00Z")  # the frozen clock starts on 2023-11-14


@pytest.fixture
def t(store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(store_url, clock=clock, inbox_cap=CAP) as tidings:
        yield tidings


def _rows(t: Tidings, user: str) -> list[tuple[int, int]]:
    """The user's stored notifications as (created_at, event id), newest first."""
    return sorted(((r["created_at"], r["event_id"]) for r in table_rows(t, "notifications")
                   if r["user_id"] == user), reverse=True)


def _live(t: Tidings, clock: FrozenClock, count: int, start: int) -> None:
    for i in range(start, start + count):
        t.publish({"type": "mention", "actor": "alice", "object": f"page:{i}",
                   "recipients": ["bob", "carol"]})
        clock.advance(1)
        if i % 10 == 9:
            t.run_jobs()
    t.run_jobs()


def _history(t: Tidings, count: int) -> None:
    """Imported mentions of bob, dated long before any live one (and with higher ids)."""
    records = [json.dumps({"kind": "event", "type": "mention", "actor": "old",
                           "object": f"page:old{i}", "recipients": ["bob"],
                           "created_at": (OLD + i * 1_000_000) / 1_000_000,
                           "idempotency_key": f"old{i}"}) for i in range(count)]
    assert import_lines(t, records).errors == []
    t.run_jobs()


def test_300_deliveries_leave_exactly_the_newest_20_by_time(
        t: Tidings, clock: FrozenClock) -> None:
    _live(t, clock, 150, 0)
    live_newest = _rows(t, "bob")
    _history(t, 50)  # 200 deliveries to bob so far
    assert _rows(t, "bob") == live_newest  # history is older: it goes, not the live items
    _live(t, clock, 100, 150)  # 300

    rows = _rows(t, "bob")
    assert len(rows) == CAP
    every_live = sorted(((r["created_at"], r["event_id"]) for r in table_rows(t, "notifications")
                         if r["user_id"] == "carol"), reverse=True)
    assert rows == every_live  # carol got the same live events and no history
    assert len(_rows(t, "carol")) == CAP
    assert [int(n.id) for n in t.notifications("bob", limit=100).items] == [e for _, e in rows]


def test_history_newer_than_some_items_keeps_its_place_by_time(
        t: Tidings, clock: FrozenClock) -> None:
    _history(t, 10)
    _live(t, clock, 15, 0)
    _history(t, 10)  # the same records again: nothing new
    assert len(_rows(t, "bob")) == CAP
    kept = _rows(t, "bob")
    assert [e for _, e in kept][:15] == sorted((e for _, e in kept[:15]), reverse=True)
    assert sum(1 for created, _ in kept if created < parse_rfc3339("2023-11-01T00:00:00Z")) == 5
