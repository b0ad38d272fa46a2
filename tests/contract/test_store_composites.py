"""Store: the composites every store has (``tidings.store.base``), written once over its units
and overridden where a store has a native faster way, answer as the unit of work does — and
so does the one async facade the API awaits (``Store.aio``), on every store."""

from __future__ import annotations

import asyncio
import json

import pytest
from contract_kit import EVERYTHING, deliver, note, publish, read, write
from test_notifier import Listener

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.events import Event
from tidings.domain.readstate import scope_name
from tidings.domain.views import Filters, Published
from tidings.exceptions import IdempotencyConflict
from tidings.jobs.model import EventJob

UNREAD = Filters(unread=True)


def inbox(store: ports.Store, clock: FrozenClock) -> None:
    """ann: three comments and two likes, the seen watermark after the first comment."""
    comments = [publish(store, clock.now_us()) for _ in range(3)]
    likes = [publish(store, clock.now_us(), type="like") for _ in range(2)]
    deliver(store, [note("ann", e, clock.now_us()) for e in comments[:1]])
    write(store, lambda tx: tx.inbox.set_marker("ann", "seen", clock.now_us()))
    deliver(store, [note("ann", e, clock.now_us()) for e in comments[1:]]
            + [note("ann", e, clock.now_us(), type="like") for e in likes])


def unit_counts(store: ports.Store, filters: Filters = UNREAD) -> tuple[int, int]:
    return read(store, lambda tx: (tx.inbox.unread_count("ann", filters),
                                   tx.inbox.unread_count("ann", filters, unseen=True)))


def test_a_count_read_on_its_own_is_the_units(store: ports.Store, clock: FrozenClock) -> None:
    inbox(store, clock)
    likes = Filters(types=("like",), unread=True)
    for filters in (UNREAD, likes):
        assert (store.unread_count("ann", filters),
                store.unread_count("ann", filters, unseen=True)) == unit_counts(store, filters)
    assert unit_counts(store) == (5, 4) and unit_counts(store, likes) == (2, 2)
    assert store.unread_count("nobody", UNREAD) == 0


@pytest.mark.parametrize("narrower", [False, True])
def test_mark_all_read_counts_moves_and_announces(store: ports.Store, clock: FrozenClock,
                                                  narrower: bool) -> None:
    inbox(store, clock)
    if narrower:  # the comments read beyond "all": the count takes the exact path
        write(store, lambda tx: tx.inbox.set_marker("ann", scope_name("type", "comment"),
                                                    clock.now_us()))
    heard = Listener()
    store.notifier.subscribe("ann", heard)
    until = clock.now_us()
    assert store.mark_all_read("ann", until) == (2 if narrower else 5)
    assert heard.wait_for(1)
    assert unit_counts(store) == (0, 0)
    assert read(store, lambda tx: tx.inbox.load_markers("ann")).all == until


def item(key: str | None, scope: str = "default", actor: str = "amy") -> ports.Publication:
    event = Event("mention", actor=actor, recipients=["bob"], idempotency_key=key)
    return ports.Publication(event, json.dumps({}), EventJob("fanout", {}, "fanout:", 3), scope)


def test_publish_answers_each_item_in_its_place(store: ports.Store, clock: FrozenClock) -> None:
    [first] = store.publish([item("used")], clock.now_us)
    assert isinstance(first, Published) and first.created
    found = store.publish([item("used"), item("used", actor="zed"), item(None), item("new"),
                           item("new"), item("used", scope="other")], clock.now_us)
    again, conflict, plain, new, repeated, elsewhere = found
    assert again == Published(first.id, created=False)
    assert isinstance(conflict, IdempotencyConflict)
    assert plain.created and new.created and elsewhere.created  # type: ignore[union-attr]
    assert repeated == Published(new.id, created=False)  # type: ignore[union-attr]
    stored = [int(p.id) for p in (first, plain, new, elsewhere)]  # type: ignore[union-attr]
    assert all(read(store, lambda tx: [tx.events.get(i) for i in stored]))
    claimed = store.queue.claim(10)
    assert sorted(job.unique_key for job in claimed) == sorted(f"fanout:{i}" for i in stored)
    assert all(job.priority == 3 and job.args == {"event_id": int(job.unique_key[7:])}
               for job in claimed)


def test_publish_all_or_none_stores_nothing_on_a_conflict(store: ports.Store,
                                                          clock: FrozenClock) -> None:
    store.publish([item("used")], clock.now_us)
    with pytest.raises(IdempotencyConflict):
        store.publish([item("fresh"), item("used", actor="zed")], clock.now_us,
                      all_or_none=True)
    assert read(store, lambda tx: tx.events.get_by_key("fresh")) is None


def test_the_async_facade_answers_as_the_unit_does(store: ports.Store,
                                                   clock: FrozenClock) -> None:
    inbox(store, clock)

    def bundles(_type: str) -> bool:
        return True

    async def awaited() -> tuple[object, ...]:
        return (await store.aio.unread_counts("ann"),
                await store.aio.page_view("ann", limit=3, bundles=bundles),
                await store.aio.publish([item("k"), item("k")], clock.now_us))

    counts, view, (first, again) = asyncio.run(awaited())
    assert counts == read(store, lambda tx: tx.inbox.unread_counts("ann", UNREAD)) == (5, 4)
    assert view == read(store, lambda tx: tx.inbox.page_view(
        "ann", EVERYTHING, limit=3, before=None, bundles=bundles))
    assert isinstance(first, Published) and first.created
    assert again == Published(first.id, created=False)
