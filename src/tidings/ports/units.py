"""The unit of work, the store that hands it out, and live updates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol, TypeVar

from tidings.domain.events import Event
from tidings.domain.views import Filters, PageView, Published
from tidings.exceptions import IdempotencyConflict
from tidings.jobs.model import EventJob
from tidings.ports.erasure import Erasure
from tidings.ports.feeds import InboxStore, TimelineStore
from tidings.ports.jobs import JobAdmin, JobQueue
from tidings.ports.push import PushStore
from tidings.ports.records import EventStore, GraphStore, MailStore, SettingsStore

T = TypeVar("T")


class Notifier(Protocol):
    """Live updates: tell listeners that users' inboxes changed."""

    cross_process: bool  # whether listeners hear of changes made by other processes

    def changed(self, users: Sequence[str]) -> None:
        """These users' inboxes or counts changed (called once the change is committed)."""

    def subscribe(self, user: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from any thread) when ``user`` changes; returns the unsubscribe."""


class Tx(Protocol):
    """One unit of work: every port of a store, seeing and writing the same state."""

    @property
    def events(self) -> EventStore: ...
    @property
    def graph(self) -> GraphStore: ...
    @property
    def inbox(self) -> InboxStore: ...
    @property
    def timeline(self) -> TimelineStore: ...
    @property
    def settings(self) -> SettingsStore: ...
    @property
    def mail(self) -> MailStore: ...
    @property
    def push(self) -> PushStore: ...
    @property
    def jobs(self) -> JobQueue: ...
    @property
    def erasure(self) -> Erasure: ...
    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once this unit has committed; never if it rolls back."""


class Publication(NamedTuple):
    """An event checked for publishing: the event, its payload JSON, the job that will fan
    it out once stored (given its id), its idempotency key's scope."""

    event: Event
    payload: str
    job: EventJob
    scope: str


class AsyncStore(Protocol):
    """What the HTTP API awaits on its event loop: each operation answers as the store's
    own does, without a thread where the store has a native asynchronous way (one statement
    on an asyncio connection), else in a worker thread. Never None: every store answers."""

    async def unread_counts(self, user: str) -> tuple[int, int]:
        """A badge's unread and unseen counts (capped, not narrowed)."""

    async def page_view(self, user: str, *, limit: int,
                        bundles: Callable[[str], bool]) -> PageView:
        """:meth:`InboxStore.page_view` of an inbox's first page, not filtered."""

    async def publish(self, items: Sequence[Publication], now: Callable[[], int]
                      ) -> list[Published | IdempotencyConflict]:
        """:meth:`Store.publish` of ``items`` (each answered in its place)."""


class Store(Protocol):
    """A configured store: units of work, the queue's own operations, and its lifecycle."""

    # told how many jobs each unit of work queued, once it has committed (metrics, and the
    # workers of this process it wakes)
    on_enqueue: Callable[[int], None] | None

    @property
    def backend(self) -> str: ...  # the kind of store: memory, sqlite, postgresql, mysql
    @property
    def queue(self) -> JobAdmin: ...  # the queue's own operations
    @property
    def notifier(self) -> Notifier: ...  # live updates of this store's users

    def transact(self, work: Callable[[Tx], T]) -> T:
        """Run ``work`` in one unit that may write; committed when it returns, rolled back
        when it raises. Retried from the start on a transient conflict (deadlock)."""

    def read(self) -> AbstractContextManager[Tx]:
        """A unit that only reads (writes in it are refused or undefined)."""

    def unread_count(self, user: str, filters: Filters, *, unseen: bool = False) -> int:
        """:meth:`InboxStore.unread_count` read on its own, without a unit the caller holds
        (a badge's, or narrowed by ``filters``; with ``unseen``, what is newer than the seen
        watermark too), capped."""

    def mark_all_read(self, user: str, until: int) -> int:
        """Move the user's "all" watermark to ``until`` and announce it to live listeners once
        committed, as one atomic step; returns the unread count it covered (capped)."""

    def publish(self, items: Sequence[Publication], now: Callable[[], int], *,
                all_or_none: bool = False) -> list[Published | IdempotencyConflict]:
        """Store the events of ``items`` with their jobs as one atomic step (stored at
        ``now()``, read as the step begins), each answered in
        its place: its new event's id (``created``), or an earlier event of its idempotency
        key within its scope (the same body: that event, not created; another body: the
        :class:`IdempotencyConflict`, raised instead with ``all_or_none`` and nothing
        stored). A key repeated among the items answers the first item's event. Retried
        once where a concurrent publish of the same key won the race."""

    @property
    def aio(self) -> AsyncStore: ...  # the operations the API awaits on its event loop

    def take_tokens(self, bucket: str, cost: float, *, rate: float, capacity: float) -> float:
        """Take ``cost`` tokens from the rate-limit ``bucket`` that every process using this
        store shares (refilled at ``rate`` a second, holding at most ``capacity``, at least
        ``cost``): 0 if they were there and are taken, else the seconds until they will be."""

    def ping(self) -> None:
        """Raise :class:`tidings.exceptions.StoreUnavailable` unless the store answers."""

    def migrate(self) -> None:
        """Create or upgrade the store's schema."""

    def check_schema(self) -> None:
        """Raise :class:`tidings.exceptions.SchemaOutOfDate` if a migration is missing."""

    def close(self) -> None:
        """Release connections."""
