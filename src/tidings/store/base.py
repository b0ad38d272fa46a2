"""The composites every store has, written once over its units of work and ports: a badge's
count, mark all read, publishing, and the operations the HTTP API awaits on its event loop.

A store inherits :class:`StoreBase` and overrides a composite where it has a native faster
way (the SQL store: one statement on a held connection, or on an asyncio connection of
psycopg); the override is the only kind of fast path, and it answers as the composite does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from typing import Any, Protocol, TypeVar

import anyio.to_thread

from tidings.domain.views import Filters, PageView, Published
from tidings.exceptions import IdempotencyConflict, StoreConflict
from tidings.jobs.model import JobSpec
from tidings.ports import AsyncStore, Notifier, Publication, Tx

T = TypeVar("T")
UNREAD = Filters(unread=True)  # a badge's count: no filter but the read state
FIRST_PAGE = Filters()  # an inbox's first page, not filtered


class StoreBase(ABC):
    """The composites of :class:`tidings.ports.Store` over ``transact`` and ``read``."""

    notifier: Notifier

    @abstractmethod
    def transact(self, work: Callable[[Any], T]) -> T: ...

    @abstractmethod
    def read(self) -> AbstractContextManager[Any]: ...

    def unread_count(self, user: str, filters: Filters, *, unseen: bool = False) -> int:
        tx: Tx
        with self.read() as tx:
            return tx.inbox.unread_count(user, filters, unseen=unseen)

    def mark_all_read(self, user: str, until: int) -> int:
        notifier = self.notifier

        def work(tx: Tx) -> int:
            tx.after_commit(lambda: notifier.changed([user]))
            before = tx.inbox.unread_count(user, UNREAD)
            tx.inbox.set_marker(user, "all", until)
            return before

        return self.transact(work)

    def publish(self, items: Sequence[Publication], now: Callable[[], int], *,
                all_or_none: bool = False) -> list[Published | IdempotencyConflict]:
        """Set-based per scope: one read of the keys, one insert of the events, one of all
        the jobs, in one unit."""
        try:
            return self.transact(lambda tx: _publish(tx, items, now(), all_or_none))
        except StoreConflict:
            # A concurrent publish with the same key won the race: now it is visible.
            return self.transact(lambda tx: _publish(tx, items, now(), all_or_none))

    @cached_property
    def aio(self) -> AsyncStore:
        return InThreads(self)


def _publish(tx: Tx, items: Sequence[Publication], now: int, all_or_none: bool
             ) -> list[Published | IdempotencyConflict]:
    by_scope: dict[str, list[int]] = {}
    for place, item in enumerate(items):
        by_scope.setdefault(item.scope, []).append(place)
    results: list[Published | IdempotencyConflict | None] = [None] * len(items)
    jobs: list[JobSpec] = []
    for scope, places in by_scope.items():
        keys = list(dict.fromkeys(k for k in (items[i].event.idempotency_key for i in places)
                                  if k is not None))
        firsts = tx.events.get_by_keys(keys, scope=scope) if keys else {}
        fresh: list[int] = []
        taken: dict[str, int] = {}  # key → the place that stores it in this unit
        repeats: list[tuple[int, int]] = []
        for i in places:
            event = items[i].event
            key = event.idempotency_key
            if key is None:
                fresh.append(i)
                continue
            first = firsts.get(key)
            earlier = taken.get(key)
            body = (first.body_hash if first is not None else
                    items[earlier].event.body_hash() if earlier is not None else None)
            if body is not None and body != event.body_hash():
                conflict = IdempotencyConflict(
                    f"idempotency_key {key!r} was used before with a different event body")
                if all_or_none:
                    raise conflict
                results[i] = conflict
            elif first is not None:
                results[i] = Published(str(first.id), created=False)
            elif earlier is not None:
                repeats.append((i, earlier))
            else:
                taken[key] = i
                fresh.append(i)
        ids = tx.events.insert_many([(items[i].event, items[i].payload) for i in fresh],
                                    now, scope=scope)
        for i, event_id in zip(fresh, ids, strict=True):
            jobs.append(items[i].job.for_event(event_id))
            results[i] = Published(str(event_id), created=True)
        for i, earlier in repeats:
            results[i] = Published(str(ids[fresh.index(earlier)]), created=False)
    tx.jobs.enqueue_many(jobs)
    return [r for r in results if r is not None]


class Units(Protocol):
    """What :class:`InThreads` runs: a store's units and its publishing composite."""

    def read(self) -> AbstractContextManager[Any]: ...
    def publish(self, items: Sequence[Publication], now: Callable[[], int], *,
                all_or_none: bool = False) -> list[Published | IdempotencyConflict]: ...


class InThreads:
    """:class:`tidings.ports.AsyncStore` of a store with no native asynchronous way: each
    operation is the store's own, run in a worker thread (anyio's, as Starlette's are)."""

    def __init__(self, store: Units) -> None:
        self.store = store

    async def unread_counts(self, user: str) -> tuple[int, int]:
        return await anyio.to_thread.run_sync(self._unread_counts, user)

    def _unread_counts(self, user: str) -> tuple[int, int]:
        tx: Tx
        with self.store.read() as tx:
            return tx.inbox.unread_counts(user, UNREAD)

    async def page_view(self, user: str, *, limit: int,
                        bundles: Callable[[str], bool]) -> PageView:
        return await anyio.to_thread.run_sync(self._page_view, user, limit, bundles)

    def _page_view(self, user: str, limit: int, bundles: Callable[[str], bool]) -> PageView:
        tx: Tx
        with self.store.read() as tx:
            return tx.inbox.page_view(user, FIRST_PAGE, limit=limit, before=None,
                                      bundles=bundles)

    async def publish(self, items: Sequence[Publication], now: Callable[[], int]
                      ) -> list[Published | IdempotencyConflict]:
        return await anyio.to_thread.run_sync(self.store.publish, items, now)
