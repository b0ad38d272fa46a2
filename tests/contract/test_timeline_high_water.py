"""TimelineStore: the cap held by a high-water mark. After any sequence of capped pushes a
mailbox holds between ``cap`` and ``high_water(cap)`` entries (fewer only while fewer were
pushed); a read with the cap shows exactly the newest ``cap`` pushed, its floor just under
them; every entry pushed and no longer held is at or below the stored floor, so the pull path
still reads it."""

from __future__ import annotations

import random

import pytest
from contract_kit import publish, read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.timeline import START, Position, high_water

T = 1_700_000_000_000_000
CAP = 5


def _held(store: ports.Store, user: str) -> list[Position]:
    """Every entry the mailbox holds, newest first (no cap, no floor)."""
    return [(e.created_at, e.id) for e in read(
        store, lambda tx: tx.timeline.page(user, limit=1_000, before=None))]


def _seen(store: ports.Store, user: str) -> tuple[Position, list[Position], list[Position]]:
    """What a read with the cap sees: ``head``'s floor and page, and ``page``'s."""
    floor, head = read(store, lambda tx: tx.timeline.head(user, limit=100, before=None,
                                                           after=None, cap=CAP))
    page = read(store, lambda tx: tx.timeline.page(user, limit=100, before=None, cap=CAP))
    return floor, [(e.created_at, e.id) for e in head], [(e.created_at, e.id) for e in page]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_mailbox_holds_between_the_cap_and_the_mark_and_reads_show_the_cap(
        store: ports.Store, clock: FrozenClock, seed: int) -> None:
    rng = random.Random(seed)
    mark = high_water(CAP)
    # dated out of id order, some older than what a mailbox already holds
    events = []
    for _ in range(40):
        created = T + rng.randrange(0, 60) * 1_000_000
        events.append((created, publish(store, clock.now_us(), created_at=created)))
    pushed: dict[str, set[Position]] = {"ann": set(), "bob": set()}
    trimmed = 0
    k = 0
    while k < len(events):
        batch = events[k:k + rng.choice((1, 1, 2, 3, 7))]
        k += len(batch)
        entries = [(i, ["ann", "bob"] if i % 2 else ["ann"], at) for at, i in batch]
        write(store, lambda tx, e=entries: tx.timeline.push_capped(e, CAP))
        for at, i in batch:
            pushed["ann"].add((at, i))
            if i % 2:
                pushed["bob"].add((at, i))
        for user, mine in pushed.items():
            held = _held(store, user)
            newest = sorted(mine, reverse=True)
            assert len(held) <= mark
            assert len(held) >= min(CAP, len(mine))
            assert set(held) <= mine
            trimmed += len(held) < len(mine)
            floor, head, page = _seen(store, user)
            assert page == newest[:CAP]
            assert head == newest[:CAP]
            assert floor == (newest[CAP] if len(newest) > CAP else START)
            stored = read(store, lambda tx, u=user: tx.timeline.floor(u))
            assert all(p <= stored for p in mine - set(held))  # the pull path reads them
    assert trimmed  # the sequence went past the mark


def test_a_write_under_the_mark_trims_nothing_and_one_past_it_trims_to_the_cap(
        store: ports.Store, clock: FrozenClock) -> None:
    mark = high_water(CAP)
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(mark + 1)]
    for event in events[:mark]:
        write(store, lambda tx, e=event: tx.timeline.push_capped([(e, ["ann"], T)], CAP))
    assert [i for _, i in _held(store, "ann")] == list(reversed(events[:mark]))
    assert read(store, lambda tx: tx.timeline.floor("ann")) == START
    write(store, lambda tx: tx.timeline.push_capped([(events[mark], ["ann"], T)], CAP))
    assert [i for _, i in _held(store, "ann")] == list(reversed(events[-CAP:]))
    assert read(store, lambda tx: tx.timeline.floor("ann")) == (T, events[-CAP - 1])
    # cap() holds the same mark; trim() is exact
    write(store, lambda tx: tx.timeline.cap(["ann"], CAP - 1))
    assert len(_held(store, "ann")) == CAP
    write(store, lambda tx: tx.timeline.trim("ann", CAP - 1))
    assert [i for _, i in _held(store, "ann")] == list(reversed(events[-CAP + 1:]))
