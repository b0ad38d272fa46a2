"""The unit of work, the store that hands it out, and live updates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

from tidings.domain.events import Event
from tidings.domain.views import PageView
from tidings.jobs.model import EventJob
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
    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once this unit has committed; never if it rolls back."""


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

    async def unread_counts_now(self, user: str) -> tuple[int, int] | None:
        """A badge's unread and unseen counts (capped, not narrowed) awaited on the running
        event loop without a thread — or None where the store cannot answer so now (then
        the caller reads them in a unit, in a thread)."""

    async def page_view_now(self, user: str, *, limit: int,
                            bundles: Callable[[str], bool]) -> PageView | None:
        """:meth:`InboxStore.page_view` of an inbox's first page, not filtered, awaited on the
        running event loop without a thread — or None where the store cannot read it so now
        (then the caller reads it in a unit, in a thread)."""

    async def publish_now(self, rows: Sequence[tuple[Event, str]], jobs: Sequence[EventJob],
                          now: int, *, scope: str) -> list[int] | None:
        """Store ``rows`` (event, payload JSON; idempotency keys within ``scope``, none
        repeated) each with its job (``jobs[i]`` for the i-th) as one atomic step awaited on
        the running event loop without a thread, returning the events' ids in the rows'
        order — or None, having stored nothing, where it cannot so now: a key already taken,
        no connection free, a value refused, a store that cannot (then the caller publishes
        them in a unit of work, in a thread, which says why)."""

    def unread_count_at_once(self, user: str, *, unseen: bool = False) -> int | None:
        """The user's unread count under the watermarks alone (a badge's: no filter; with
        ``unseen``, what is newer than the seen watermark too), capped, read without a unit
        of work — or None where the store has no such read (then the caller reads it in a
        unit)."""

    def mark_all_read_at_once(self, user: str, until: int) -> int | None:
        """Move the user's "all" watermark to ``until`` and announce it to live listeners as
        one atomic step, returning the unread count it covered (capped) — or None, having done
        nothing, where the store cannot (then the caller does it as a unit of work)."""

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
