"""The per-user inbox cap keeps the newest notifications by time: at least the newest
``inbox_cap``, and about a margin more (``tidings.domain.inboxcap``: about one delivery in a
margin checks, with no count stored), whatever the write path; nothing newer than a kept
notification is ever removed, and back-filled history never evicts newer live items."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from engines import open_tidings, table_rows
from tidings.clock import FrozenClock, parse_rfc3339
from tidings.domain.inboxcap import margin
from tidings.engine import Tidings
from tidings.importer import import_lines

CAP = 20
# the most a capped inbox is seen to hold here: the cap and eight margins (a run of 16
# deliveries none of which checks has a chance of 2**-16)
MOST = CAP + 8 * margin(CAP)
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


def _delivered(t: Tidings, user: str) -> list[tuple[int, int]]:
    """Every notification the user was ever sent as (created_at, event id), newest first:
    each is dated with its event."""
    return sorted(((r["created_at"], r["id"]) for r in table_rows(t, "events")
                   if user in json.loads(r["recipients"])), reverse=True)


def _capped(t: Tidings, user: str) -> list[tuple[int, int]]:
    """The user's rows, checked against the cap: the newest of everything they were sent,
    at least ``CAP`` of them, at most ``MOST``; and listed as they are stored."""
    rows = _rows(t, user)
    assert CAP <= len(rows) <= MOST
    assert rows == _delivered(t, user)[:len(rows)]  # nothing newer than a kept one went
    assert [int(n.id) for n in t.notifications(user, limit=100).items] == [e for _, e in rows]
    return rows


def test_300_deliveries_leave_the_newest_20_by_time_and_about_a_margin(
        t: Tidings, clock: FrozenClock) -> None:
    _live(t, clock, 150, 0)
    live_newest = _capped(t, "bob")
    _history(t, 50)  # 200 deliveries to bob so far
    rows = _rows(t, "bob")  # history is older: it goes, not the live items
    assert rows[:CAP] == live_newest[:CAP] and len(rows) <= MOST
    assert all(created < parse_rfc3339("2023-11-01T00:00:00Z") for created, _ in rows
               if (created, _) not in live_newest)
    sizes = []
    for start in range(150, 250, 10):  # 300
        _live(t, clock, 10, start)
        sizes.append(len(_capped(t, "bob")))
    assert len(set(sizes)) > 1 and min(sizes) <= CAP + margin(CAP)  # checked, and trimmed
    rows = _capped(t, "bob")
    assert rows[:CAP] == _capped(t, "carol")[:CAP]  # the same live events and no history


def test_history_newer_than_some_items_keeps_its_place_by_time(
        t: Tidings, clock: FrozenClock) -> None:
    _history(t, 10)
    _live(t, clock, 15, 0)
    _history(t, 10)  # the same records again: nothing new
    kept = _capped(t, "bob")
    assert [e for _, e in kept][:15] == sorted((e for _, e in kept[:15]), reverse=True)
    assert sum(1 for created, _ in kept if created < parse_rfc3339("2023-11-01T00:00:00Z")) \
        == len(kept) - 15
