"""TimelineStore: idempotent pushes, pages newest first by event id, trimming."""

from __future__ import annotations

import pytest
from contract_kit import publish, read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.views import TimelineEntry


def _page(store: ports.Store, user: str, *, limit: int = 100,
          before: int | None = None) -> list[int]:
    return [e.id for e in read(store, lambda tx: tx.timeline.page(user, limit=limit,
                                                                  before=before))]


def test_an_entry_is_the_event_as_published(store: ports.Store, clock: FrozenClock) -> None:
    event = publish(store, clock.now_us(), type="post", actor="bob", object="post:7",
                    payload={"title": "hello"}, created_at=1234)
    write(store, lambda tx: tx.timeline.push(event, ["ann"], clock.now_us()))
    assert read(store, lambda tx: tx.timeline.page("ann", limit=10, before=None)) == [
        TimelineEntry(id=event, type="post", actor="bob", object="post:7",
                      payload={"title": "hello"}, created_at=1234)]


def test_push_is_idempotent(store: ports.Store, clock: FrozenClock) -> None:
    event = publish(store, clock.now_us())
    write(store, lambda tx: tx.timeline.push(event, ["ann", "bob"], clock.now_us()))
    write(store, lambda tx: tx.timeline.push(event, ["ann", "cat"], clock.now_us()))
    write(store, lambda tx: tx.timeline.push(event, [], clock.now_us()))
    assert [_page(store, u) for u in ("ann", "bob", "cat", "dan")] == [[event]] * 3 + [[]]


def test_pages_newest_event_first_below_a_cursor(store: ports.Store, clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us(), created_at=9 - n) for n in range(5)]
    for event in reversed(events):  # pushed in any order: the event id orders them
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann"], clock.now_us()))
    newest_first = list(reversed(events))
    assert _page(store, "ann") == newest_first
    assert _page(store, "ann", limit=2) == newest_first[:2]
    assert _page(store, "ann", before=newest_first[1]) == newest_first[2:]
    assert _page(store, "ann", before=newest_first[-1]) == []


def test_retracted_and_deleted_events_are_not_shown(store: ports.Store,
                                                    clock: FrozenClock) -> None:
    kept, retracted, deleted = (publish(store, clock.now_us()) for _ in range(3))
    for event in (kept, retracted, deleted):
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann"], clock.now_us()))
    write(store, lambda tx: tx.events.mark_retracted([retracted], clock.now_us()))
    write(store, lambda tx: tx.events.delete([deleted]))
    assert _page(store, "ann") == [kept]


def test_trim_keeps_the_newest_entries(store: ports.Store, clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us()) for _ in range(5)]
    for event in events:
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann", "bob"], clock.now_us()))
    assert write(store, lambda tx: tx.timeline.trim("ann", 5)) == 0
    assert write(store, lambda tx: tx.timeline.trim("ann", 2)) == 3
    assert _page(store, "ann") == [events[4], events[3]]
    assert write(store, lambda tx: tx.timeline.trim("ann", 0)) == 2
    assert _page(store, "ann") == []
    assert len(_page(store, "bob")) == 5
    assert write(store, lambda tx: tx.timeline.trim("nobody", 1)) == 0


def test_a_push_of_a_failed_unit_is_undone(store: ports.Store, clock: FrozenClock) -> None:
    event = publish(store, clock.now_us())

    def work(tx: ports.Tx) -> None:
        tx.timeline.push(event, ["ann"], clock.now_us())
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert _page(store, "ann") == []
