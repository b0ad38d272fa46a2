"""TimelineStore: idempotent pushes, pages newest first by position (the event's time, then
its id), trimming, the cap's high-water mark. The events here are all dated alike
(``created_at=T``) unless a test dates them otherwise: their positions are (T, id), in id
order. A capped mailbox is read as a timeline reads it, with the cap (``_page`` and
``_floor`` with ``cap``): its newest ``cap`` entries, and the floor under them."""

from __future__ import annotations

import pytest
from contract_kit import publish, read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.timeline import START, Position
from tidings.domain.views import TimelineEntry

T = 1_700_000_000_000_000  # when the events are dated


def at(event: int) -> Position:
    """The position of an event published at ``T``."""
    return (T, event)


def _page(store: ports.Store, user: str, *, limit: int = 100,
          before: Position | None = None, cap: int | None = None) -> list[int]:
    return [e.id for e in read(store, lambda tx: tx.timeline.page(user, limit=limit,
                                                                  before=before, cap=cap))]


def test_an_entry_is_the_event_as_published(store: ports.Store, clock: FrozenClock) -> None:
    event = publish(store, clock.now_us(), type="post", actor="bob", object="post:7",
                    payload={"title": "hello"}, created_at=1234)
    write(store, lambda tx: tx.timeline.push(event, ["ann"], 1234))
    assert read(store, lambda tx: tx.timeline.page("ann", limit=10, before=None)) == [
        TimelineEntry(id=event, type="post", actor="bob", object="post:7",
                      payload={"title": "hello"}, created_at=1234)]


def test_push_is_idempotent(store: ports.Store, clock: FrozenClock) -> None:
    event = publish(store, clock.now_us(), created_at=T)
    write(store, lambda tx: tx.timeline.push(event, ["ann", "bob"], T))
    write(store, lambda tx: tx.timeline.push(event, ["ann", "cat"], T))
    write(store, lambda tx: tx.timeline.push(event, [], T))
    assert [_page(store, u) for u in ("ann", "bob", "cat", "dan")] == [[event]] * 3 + [[]]


def test_pages_newest_event_first_below_a_cursor(store: ports.Store, clock: FrozenClock) -> None:
    dated = [(9 - n, publish(store, clock.now_us(), created_at=9 - n)) for n in range(5)]
    for created_at, event in reversed(dated):  # pushed in any order: the time orders them,
        write(store, lambda tx, e=event, c=created_at: tx.timeline.push(e, ["ann"], c))
    newest_first = [e for _, e in dated]  # not the id (the oldest event has the highest)
    assert _page(store, "ann") == newest_first
    assert _page(store, "ann", limit=2) == newest_first[:2]
    assert _page(store, "ann", before=dated[1]) == newest_first[2:]
    assert _page(store, "ann", before=dated[-1]) == []


def test_retracted_and_deleted_events_are_not_shown(store: ports.Store,
                                                    clock: FrozenClock) -> None:
    kept, retracted, deleted = (publish(store, clock.now_us(), created_at=T) for _ in range(3))
    for event in (kept, retracted, deleted):
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann"], T))
    write(store, lambda tx: tx.events.mark_retracted([retracted], T))
    write(store, lambda tx: tx.events.delete([deleted]))
    assert _page(store, "ann") == [kept]


def test_a_head_fills_its_page_past_retracted_events(store: ports.Store,
                                                    clock: FrozenClock) -> None:
    """The head's page (with the floor, in one read where the store can) still holds
    ``limit`` entries when retracted or deleted events sat among its newest."""
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(6)]
    for event in events:
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann"], T))
    write(store, lambda tx: tx.timeline.raise_floor("ann", at(events[0])))
    write(store, lambda tx: tx.events.mark_retracted([events[5]], T))
    write(store, lambda tx: tx.events.delete([events[3]]))

    def head(**kw: Position | None) -> tuple[Position, list[int]]:
        floor, page = read(store, lambda tx: tx.timeline.head("ann", limit=3, **kw))
        return floor, [e.id for e in page]

    assert head(before=None, after=None) == (at(events[0]), [events[4], events[2], events[1]])
    assert head(before=at(events[4]), after=None) == (at(events[0]), [events[2], events[1]])
    assert head(before=None, after=at(events[2])) == (at(events[0]), [events[4]])


def test_trim_keeps_the_newest_entries(store: ports.Store, clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(5)]
    for event in events:
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann", "bob"], T))
    assert write(store, lambda tx: tx.timeline.trim("ann", 5)) == 0
    assert write(store, lambda tx: tx.timeline.trim("ann", 2)) == 3
    assert _page(store, "ann") == [events[4], events[3]]
    assert write(store, lambda tx: tx.timeline.trim("ann", 0)) == 2
    assert _page(store, "ann") == []
    assert len(_page(store, "bob")) == 5
    assert write(store, lambda tx: tx.timeline.trim("nobody", 1)) == 0


def test_a_push_of_a_failed_unit_is_undone(store: ports.Store, clock: FrozenClock) -> None:
    event = publish(store, clock.now_us(), created_at=T)

    def work(tx: ports.Tx) -> None:
        tx.timeline.push(event, ["ann"], T)
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert _page(store, "ann") == []


def _floor(store: ports.Store, user: str, cap: int | None = None) -> Position:
    """The stored floor; with ``cap``, the floor a read with the cap sees (``head``'s)."""
    if cap is None:
        return read(store, lambda tx: tx.timeline.floor(user))
    return read(store, lambda tx: tx.timeline.head(user, limit=1, before=None, after=None,
                                                   cap=cap))[0]


def test_pages_above_a_lower_bound(store: ports.Store, clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(5)]
    for event in events:
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann"], T))
    got = read(store, lambda tx: tx.timeline.page("ann", limit=10, before=at(events[4]),
                                                  after=at(events[0])))
    assert [e.id for e in got] == [events[3], events[2], events[1]]
    got = read(store, lambda tx: tx.timeline.page("ann", limit=2, before=None,
                                                  after=at(events[1])))
    assert [e.id for e in got] == [events[4], events[3]]


def test_fill_writes_entries_once(store: ports.Store, clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(3)]
    write(store, lambda tx: tx.timeline.fill("ann", [(e, T) for e in events[:2]]))
    write(store, lambda tx: tx.timeline.fill("ann", [(e, T) for e in events]))
    write(store, lambda tx: tx.timeline.fill("ann", []))
    assert _page(store, "ann") == list(reversed(events))


def test_the_floor_only_rises_and_trims_raise_it(store: ports.Store,
                                                 clock: FrozenClock) -> None:
    assert _floor(store, "ann") == START
    write(store, lambda tx: tx.timeline.raise_floor("ann", (5, 7)))
    write(store, lambda tx: tx.timeline.raise_floor("ann", (5, 3)))
    write(store, lambda tx: tx.timeline.raise_floor("ann", (4, 9)))
    assert (_floor(store, "ann"), _floor(store, "bob")) == ((5, 7), START)
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(12)]
    for event in events:
        write(store, lambda tx, e=event: tx.timeline.push(e, ["bob"], T))
    write(store, lambda tx: tx.timeline.trim("bob", 4))
    assert _floor(store, "bob") == at(events[7])
    assert _page(store, "bob") == list(reversed(events[8:]))


def test_cap_trims_only_mailboxes_over_it(store: ports.Store, clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(6)]
    for event in events:
        def work(tx: ports.Tx, e: int = event) -> None:
            tx.timeline.push(e, ["ann", "bob"] if e <= events[2] else ["ann"], T)
            tx.timeline.cap(["ann", "bob"], 3)
        write(store, work)
    assert _page(store, "ann", cap=3) == list(reversed(events[3:]))
    assert _page(store, "bob", cap=3) == list(reversed(events[:3]))
    assert (_floor(store, "ann", 3), _floor(store, "bob", 3)) == (at(events[2]), START)


def test_one_cap_trims_mailboxes_over_it_by_different_amounts(store: ports.Store,
                                                             clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(9)]
    write(store, lambda tx: tx.timeline.raise_floor("cat", at(events[0])))

    def work(tx: ports.Tx) -> None:
        tx.timeline.fill("ann", [(e, T) for e in events[:4]])
        tx.timeline.fill("bob", [(e, T) for e in events])
        tx.timeline.fill("cat", [(e, T) for e in events[:5]])  # a floor already
        tx.timeline.fill("dan", [(e, T) for e in events[:2]])
        tx.timeline.push(events[8], ["ann", "cat", "dan"], T)
        tx.timeline.cap(["ann", "bob", "cat", "dan", "eve", "ann"], 3)

    write(store, work)  # over the cap by 2, 6, 3, 0 and nothing
    assert _page(store, "ann", cap=3) == [events[8], events[3], events[2]]
    assert _page(store, "bob", cap=3) == [events[8], events[7], events[6]]
    assert _page(store, "cat", cap=3) == [events[8], events[4], events[3]]
    assert _page(store, "dan", cap=3) == [events[8], events[1], events[0]]
    assert [_floor(store, u, 3) for u in ("ann", "bob", "cat", "dan", "eve")] == [
        at(events[1]), at(events[5]), at(events[2]), START, START]
    write(store, lambda tx: (tx.timeline.push(events[7], ["dan"], T),
                             tx.timeline.cap(["dan"], 3)))
    assert _page(store, "dan", cap=3) == [events[8], events[7], events[1]]
    assert _floor(store, "dan", 3) == at(events[0])


def test_remove_source_takes_one_actors_entries(store: ports.Store,
                                               clock: FrozenClock) -> None:
    ann = [publish(store, clock.now_us(), actor="ann", created_at=T) for _ in range(3)]
    cat = [publish(store, clock.now_us(), actor="cat", created_at=T) for _ in range(2)]
    write(store, lambda tx: tx.events.mark_retracted([ann[0]], T))
    for event in ann + cat:
        write(store, lambda tx, e=event: tx.timeline.push(e, ["bob", "dan"], T))
    assert write(store, lambda tx: tx.timeline.remove_source("bob", "ann")) == 3
    assert write(store, lambda tx: tx.timeline.remove_source("bob", "eve")) == 0
    assert _page(store, "bob") == list(reversed(cat))
    assert len(_page(store, "dan")) == 4


def test_head_is_the_floor_and_the_page_above_it(store: ports.Store,
                                                 clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(6)]
    for event in events:
        write(store, lambda tx, e=event: tx.timeline.push(e, ["ann"], T))

    def head(**kw: Position | None) -> tuple[Position, list[int]]:
        floor, page = read(store, lambda tx: tx.timeline.head("ann", limit=3, **kw))
        return floor, [e.id for e in page]

    assert head(before=None, after=None) == (START, [events[5], events[4], events[3]])
    write(store, lambda tx: tx.timeline.raise_floor("ann", at(events[2])))
    assert head(before=at(events[5]), after=None) == (at(events[2]), [events[4], events[3]])
    assert head(before=None, after=at(events[3])) == (at(events[2]), [events[5], events[4]])
    assert head(before=at(events[3]), after=None) == (at(events[2]), [])
    assert read(store, lambda tx: tx.timeline.head("bob", limit=3, before=None,
                                                   after=None)) == (START, [])


def test_push_many_is_every_push_at_once(store: ports.Store, clock: FrozenClock) -> None:
    first, second, third = (publish(store, clock.now_us(), created_at=T) for _ in range(3))
    write(store, lambda tx: tx.timeline.push(first, ["ann"], T))
    write(store, lambda tx: tx.timeline.push_many([
        (first, ["ann", "bob"], T), (second, ["bob"], T),
        (third, ["ann", "bob", "cat"], T), (third, ["cat"], T)]))
    write(store, lambda tx: tx.timeline.push_many([]))
    assert [_page(store, u) for u in ("ann", "bob", "cat")] == [
        [third, first], [third, second, first], [third]]
    write(store, lambda tx: tx.timeline.cap(["ann", "bob", "cat"], 2))
    assert _page(store, "bob", cap=2) == [third, second]
    # ann's bound may have counted the repeated push: a store that keeps only a bound may
    # remove or hide one more (the floor covers it)
    assert _page(store, "ann", cap=2) in ([third, first], [third])
    assert _page(store, "cat", cap=2) == [third]


def test_push_capped_keeps_the_newest_and_raises_the_floor(store: ports.Store,
                                                          clock: FrozenClock) -> None:
    """The fan-out's write: whatever the entries (newer than all held, older than the
    boundary, more than the cap at once, repeated), each mailbox written keeps its newest
    ``cap`` and its floor rises past what went; mailboxes not written are left alone."""
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(12)]
    floor = lambda user: _floor(store, user, 3)  # noqa: E731
    write(store, lambda tx: tx.timeline.push_many([(e, ["ann", "bob", "dan"], T)
                                                   for e in events[2:5]]))
    # newer than every entry held: ann and bob lose their oldest; dan is not written
    write(store, lambda tx: tx.timeline.push_capped(
        [(events[5], ["ann", "bob"], T), (events[6], ["ann"], T)], 3))
    assert _page(store, "ann", cap=3) == [events[6], events[5], events[4]]
    assert _page(store, "bob", cap=3) == [events[5], events[4], events[3]]
    assert _page(store, "dan", cap=3) == [events[4], events[3], events[2]]
    assert (floor("ann"), floor("bob"), floor("dan")) == (at(events[3]), at(events[2]), START)
    # older than the boundary: the old entry goes again at once, the floor stays above it
    write(store, lambda tx: tx.timeline.push_capped([(events[0], ["ann"], T)], 3))
    assert _page(store, "ann", cap=3) == [events[6], events[5], events[4]]
    assert floor("ann") == at(events[3])
    # new entries between those held: fewer held entries are older than the new ones than
    # the mailbox is over the cap by, so a new entry goes too
    write(store, lambda tx: tx.timeline.push_many([(e, ["eve"], T)
                                                   for e in (events[2], events[5], events[6])]))
    write(store, lambda tx: tx.timeline.push_capped(
        [(events[3], ["eve"], T), (events[4], ["eve"], T)], 3))
    assert _page(store, "eve", cap=3) == [events[6], events[5], events[4]]
    assert floor("eve") == at(events[3])
    # once more, one new entry: the oldest held goes
    write(store, lambda tx: tx.timeline.push_capped([(events[7], ["bob"], T)], 3))
    assert _page(store, "bob", cap=3) == [events[7], events[5], events[4]]
    # more new entries than the cap at once, into an empty mailbox and a full one
    write(store, lambda tx: tx.timeline.push_capped(
        [(e, ["cat", "bob"], T) for e in events[8:12]], 3))
    assert _page(store, "cat", cap=3) == [events[11], events[10], events[9]]
    assert _page(store, "bob", cap=3) == [events[11], events[10], events[9]]
    assert floor("cat") == at(events[8])
    assert floor("bob") == at(events[8])
    # and later writes count from there: one more entry, one more goes
    extra = publish(store, clock.now_us(), created_at=T)
    write(store, lambda tx: tx.timeline.push_capped([(extra, ["cat"], T)], 3))
    assert _page(store, "cat", cap=3) == [extra, events[11], events[10]]
    assert floor("cat") == at(events[9])
    # a repeated entry beside a new one: a store that keeps only a bound of the size, counting
    # the repeat, may remove one more (the floor covers it)
    last = publish(store, clock.now_us(), created_at=T)
    write(store, lambda tx: tx.timeline.push_capped(
        [(extra, ["cat"], T), (last, ["cat"], T)], 3))
    assert _page(store, "cat", cap=3) in ([last, extra, events[11]], [last, extra])


def test_cap_holds_where_a_bound_counted_more_entries_than_are_held(
        store: ports.Store, clock: FrozenClock) -> None:
    """A bound that counted repeated pushes can be over the cap by more than the mailbox
    holds entries: the cap still leaves the newest ``cap`` entries, in that same call."""
    first, second, third = (publish(store, clock.now_us(), created_at=T) for _ in range(3))
    write(store, lambda tx: tx.timeline.push_many(
        [(first, ["ann"], T)] * 3 + [(second, ["ann"], T)]))
    write(store, lambda tx: tx.timeline.cap(["ann"], 1))
    assert _page(store, "ann", cap=1) == [second]
    write(store, lambda tx: (tx.timeline.push(third, ["ann"], T),
                             tx.timeline.cap(["ann"], 1)))
    assert _page(store, "ann", cap=1) == [third]


def test_push_capped_takes_more_entries_for_one_mailbox_than_a_command_holds(
        store: ports.Store, clock: FrozenClock) -> None:
    """One mailbox given a thousand entries and more at once (Redis: more ids than one
    ``ZADD`` of the script takes) keeps the newest ``cap``."""
    events = [publish(store, clock.now_us(), created_at=T) for _ in range(1_100)]
    write(store, lambda tx: tx.timeline.push_capped(
        [(e, ["ann"], T) for e in events], 1_050))
    assert _page(store, "ann", limit=2_000, cap=1_050) == list(reversed(events[50:]))
    assert _floor(store, "ann", 1_050) == at(events[49])
