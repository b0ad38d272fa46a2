"""The ports: what the services need of a store, as small Protocols of primitives.

A store (``tidings.store.sql``, ``tidings.store.memory``, later Redis for the hot parts) hands
out a :class:`Tx` — one unit of work whose ports all see the same state — through
:meth:`Store.transact` (may write) and :meth:`Store.read` (reads only). Every rule lives in the
services and the domain; a port method does one storage step and decides nothing.

Delivery promises, which every implementation keeps and ``tests/contract`` checks:

- **Atomic units.** On a store that has transactions (SQL, memory) everything done through one
  ``Tx`` commits together or not at all, jobs included. A store that cannot join that
  transaction (Redis for inboxes) must make each write **idempotent** instead, so that a job
  retried after a crash writes nothing twice.
- **Idempotent writes.** ``InboxStore.insert`` skips a (user, event) already stored;
  ``TimelineStore.push`` skips a (user, event) already there; ``JobQueue.enqueue_many`` skips a
  ``unique_key`` already queued; ``MailStore.add_batch`` skips a (user, event) already
  waiting.
- **At-least-once jobs.** A claimed job is leased until ``token``; completing it inside the unit
  that did its work removes it only if the lease is still the claimant's (else the whole unit is
  rolled back by the caller). A worker that dies leaves the lease to expire and the job runs
  again: handlers must be safe to repeat.
- **Watermarks only move forward.** ``InboxStore.set_marker`` never moves a mark back.
- **Reads never scan.** ``InboxStore.page`` and ``unread_count`` read base rows through an
  index; ``unread_count`` stops at :data:`tidings.domain.bundling.UNREAD_CAP`.

Sync by decision (``docs/architecture.md``, "Sync ports").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from tidings.domain.audience import AudienceSource
from tidings.domain.events import Event
from tidings.domain.readstate import Markers
from tidings.domain.views import (
    BundleBase,
    Filters,
    Follow,
    GroupInfo,
    InboxRow,
    MailBatchRow,
    NewNotification,
    NotificationKey,
    ReadState,
    StoredEvent,
    Subscription,
    TimelineEntry,
)
from tidings.jobs.model import Failure, Job, JobSpec

T = TypeVar("T")


class EventStore(Protocol):
    """Accepted events: the source of truth of every notification."""

    def insert(self, event: Event, payload_json: str, now: int) -> int:
        """Store an event; return its id (ids grow with time of insertion)."""

    def get(self, event_id: int, *, lock: bool = False) -> StoredEvent | None:
        """One event; ``lock`` makes a concurrent retraction of it wait for this unit."""

    def get_by_key(self, key: str) -> StoredEvent | None:
        """The event stored under this idempotency key, if any."""

    def find_ids(self, *, type: str | None, actor: str | None, object: str | None,
                 after_id: int = 0, limit: int = 1000) -> list[int]:
        """Ids of unretracted events matching every given field, ascending after ``after_id``."""

    def mark_retracted(self, event_ids: Sequence[int], now: int) -> None:
        """Flag events retracted: later fan-out of them delivers nothing."""

    def expired_ids(self, *, types: Sequence[str] | None, other_than: Sequence[str] | None,
                    before: int, limit: int) -> list[int]:
        """Ids of events created before ``before``: of ``types``, or of any type not in
        ``other_than`` (both None: any type)."""

    def delete(self, event_ids: Sequence[int]) -> None:
        """Remove events for good (retention)."""

    def actors_of(self, event_ids: Sequence[int]) -> list[str]:
        """Distinct actors of these events, newest event first."""


class GraphStore(Protocol):
    """Who hears of what: users, subscriptions, follows and mutes."""

    def add_user(self, user: str, now: int) -> bool:
        """Register a user; True if the user is new."""

    def set_joined(self, user: str, joined: int) -> None:
        """Correct a registered user's join time (import)."""

    def joined(self, users: Sequence[str]) -> dict[str, int]:
        """Join times of those of ``users`` who are registered."""

    def save_subscription(self, user: str, type: str, object: str, channels: Sequence[str],
                          now: int) -> Subscription:
        """Create a subscription, or replace the channels of the same (user, type, object)."""

    def delete_subscription(self, user: str, subscription_id: int) -> bool:
        """Remove one of the user's subscriptions; False if there was none with that id."""

    def subscriptions(self, user: str, *, after_id: int, limit: int) -> list[Subscription]:
        """A user's subscriptions by ascending id after ``after_id``."""

    def add_follow(self, follower: str, followee: str, now: int) -> bool:
        """True if the edge is new."""

    def remove_follow(self, follower: str, followee: str) -> bool:
        """True if there was such an edge."""

    def follows(self, user: str, *, followers: bool, after: str, limit: int) -> list[Follow]:
        """Whom ``user`` follows (or, ``followers=True``, who follows them) by ascending id."""

    def audience(self, source: AudienceSource, *, after: str, upto: str | None,
                 limit: int | None = None) -> list[str]:
        """Distinct users of a source with ids in (after, upto], ascending by code point
        (SQL stores need a byte-order collation on user ids, as the migrations declare)."""

    def nth_after(self, source: AudienceSource, after: str, n: int) -> str | None:
        """The n-th user id of a source after ``after`` (a chunk boundary), or None."""

    def add_mute(self, user: str, kind: str, value: str) -> None:
        """Mute an actor (``kind="actor"``) or an object; idempotent."""

    def remove_mute(self, user: str, kind: str, value: str) -> int:
        """Unmute; returns how many mutes went."""

    def replace_mutes(self, user: str, pairs: Sequence[tuple[str, str]]) -> None:
        """Make (kind, value) pairs the user's whole list of mutes."""

    def mutes(self, user: str) -> list[tuple[str, str]]:
        """A user's mutes as (kind, value), sorted."""

    def muting(self, users: Sequence[str], actor: str | None, object: str | None) -> set[str]:
        """Those of ``users`` who muted this actor or this object."""


class InboxStore(Protocol):
    """Notification rows with their bundling columns, and the read watermarks."""

    def load_markers(self, user: str) -> Markers:
        """A user's watermarks (absent: all zero)."""

    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]:
        """Watermarks of those users who have any."""

    def set_marker(self, user: str, scope: str, until: int) -> None:
        """Move a watermark forward to ``until`` (never back)."""

    def bundle_bases(self, users: Sequence[str], bundle_hash: str) -> dict[str, BundleBase]:
        """Per user, the newest base row of this bundle. Stores with row locks lock them, so
        two units deciding to join the same group are serialised."""

    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]:
        """Those of ``users`` who already hold a notification of this event."""

    def insert(self, rows: Sequence[NewNotification]) -> None:
        """Write base rows; a (user, event) already stored is skipped."""

    def demote(self, groups: Sequence[tuple[str, str]]) -> None:
        """(user, display hash) groups whose current base row stops being the base."""

    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]:
        """Base rows newest first by (created_at, event id), strictly before ``before``."""

    def group_info(self, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]:
        """Member count (up to the actor scan) and newest distinct actors per display group."""

    def unread_count(self, user: str, filters: Filters, markers: Markers) -> int:
        """Unread base rows matching ``filters``, counted up to the cap."""

    def groups_by_ids(self, user: str, event_ids: Sequence[int]) -> list[str]:
        """Display groups holding any of these events."""

    def groups_by_match(self, user: str, *, actor: str | None, type: str | None,
                        object: str | None) -> list[str]:
        """Display groups holding a notification matching every given field."""

    def mark_groups(self, user: str, groups: Sequence[str], *, read: bool, now: int,
                    markers: Markers) -> int:
        """Mark every member read (or unread again); return how many groups changed state."""

    def read_states(self, user: str, event_ids: Sequence[int]) -> list[ReadState]:
        """The read columns of the user's notifications of these events."""

    def keys_for_events(self, event_ids: Sequence[int]) -> list[NotificationKey]:
        """Every stored notification of these events."""

    def remove(self, keys: Sequence[NotificationKey]) -> int:
        """Delete notifications; a group that loses its base gets its next newest member as
        base. Returns rows deleted."""

    def trim(self, user: str, cap: int) -> int:
        """Delete a user's oldest notifications beyond ``cap``, at most 5,000 a call (call
        again while it returns rows); return rows deleted."""


class TimelineStore(Protocol):
    """Push-model timelines: events written into followers' mailboxes."""

    def push(self, event_id: int, users: Sequence[str], now: int) -> None:
        """Write the event into these users' timelines; idempotent."""

    def page(self, user: str, *, limit: int, before: int | None) -> list[TimelineEntry]:
        """Unretracted events newest first by event id, strictly below ``before``."""

    def trim(self, user: str, cap: int) -> int:
        """Keep the newest ``cap`` entries; return how many went."""


class SettingsStore(Protocol):
    """Declared event types, user preferences and bounced addresses."""

    def save_type(self, name: str, definition: str, now: int) -> None:
        """Store (or replace) a type's JSON definition."""

    def load_types(self) -> list[tuple[str, str]]:
        """Every stored (name, JSON definition)."""

    def preferences(self, user: str) -> dict[str, Any] | None:
        """A user's stored preferences, or None if never set."""

    def preferences_many(self, users: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Preferences of those users who have any."""

    def save_preferences(self, user: str, data: Mapping[str, Any], now: int) -> None:
        """Replace a user's preferences."""

    def report_bounce(self, address: str, reason: str, now: int) -> None:
        """Record a hard bounce of a (lower-cased) address."""

    def clear_bounce(self, address: str) -> bool:
        """Forget a bounce; True if there was one."""

    def bounced(self, addresses: Sequence[str]) -> set[str]:
        """Those (lower-cased) addresses that bounced."""


class MailStore(Protocol):
    """Outbound channel state: bundling windows, waiting mail, the sent log, webhook attempts."""

    def last_email_at(self, user: str, bundle_hash: str) -> int | None:
        """When the user's last mail of this bundle went out (window start), if ever."""

    def set_last_email_at(self, user: str, bundle_hash: str, at: int) -> None:
        """Start a new bundling window."""

    def add_batch(self, rows: Sequence[MailBatchRow]) -> None:
        """Keep notifications for a later mail; a (user, event) already waiting is skipped."""

    def batch(self, user: str, kind: str, *, bundle_hash: str | None = None,
              created_until: int | None = None, limit: int | None = None
              ) -> list[MailBatchRow]:
        """Waiting rows of a user and kind: by (priority, newest event first) for digests, by
        newest event first for bundles."""

    def delete_batch(self, ids: Sequence[int]) -> None:
        """Drop waiting rows (they are being mailed)."""

    def cancel_events(self, event_ids: Sequence[int]) -> None:
        """A retraction: these events wait for no mail any more."""

    def sent_count(self, user: str, kind: str, since: int) -> int:
        """Mails of ``kind`` sent to the user since ``since``."""

    def log_sent(self, message_id: str, user: str, kind: str, address: str, subject: str,
                 at: int) -> None:
        """Record a sent mail."""

    def log_webhook(self, user: str, event_id: int, url: str, status: int | None,
                    attempt: int, error: str | None, at: int) -> None:
        """Record one webhook attempt."""


class JobQueue(Protocol):
    """The job queue as seen inside a unit of work: enqueue with it, finish with it."""

    def enqueue_many(self, specs: Sequence[JobSpec]) -> None:
        """Add jobs; one whose ``unique_key`` is already queued is skipped."""

    def complete(self, job: Job) -> bool:
        """Remove the job if its lease is still ``job.token``; False if it was lost."""

    def replace_with(self, job: Job, specs: Sequence[JobSpec]) -> bool:
        """Swap the job atomically for ``specs`` (TheSchwartz's replace_with)."""

    def cancel(self, func: str, key_prefix: str) -> int:
        """Delete unclaimed jobs of ``func`` whose unique key starts with ``key_prefix``."""

    def record_failure(self, job: Job, error: str, *, final: bool, now: int) -> None:
        """Log a failed attempt (a handler that retries by itself)."""


class JobAdmin(Protocol):
    """Queue operations that run in units of their own: claiming, failing, inspecting."""

    def claim(self, limit: int = 1, funcs: Sequence[str] | None = None,
              exclude: Sequence[str] | None = None) -> list[Job]:
        """Lease up to ``limit`` runnable jobs, lowest priority number first."""

    def fail(self, job: Job, error: str) -> bool:
        """Record a failed attempt; retry later with backoff or, after the last, give up.
        True if it will be retried. A claim whose lease passed to another worker records
        nothing and returns False."""

    def release(self, job: Job) -> None:
        """Give a claimed job back without counting the attempt (a graceful stop)."""

    def still_mine(self, job: Job) -> bool:
        """Whether the claim's lease still holds (checked before a send that cannot be undone)."""

    def stats(self) -> dict[str, int]:
        """Jobs queued, runnable, running, and final failures."""

    def next_run_after(self) -> int | None:
        """When the earliest queued job becomes runnable."""

    def counts_by_func(self) -> dict[str, int]:
        """Queued jobs (claimed ones included) per job function, for operators."""

    def failures(self, limit: int = 50, final_only: bool = False) -> list[Failure]:
        """Recent failures, newest first."""


class Notifier(Protocol):
    """Live updates: tell listeners that users' inboxes changed."""

    @property
    def cross_process(self) -> bool: ...  # whether listeners hear of other processes' changes
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
    def jobs(self) -> JobQueue: ...
    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once this unit has committed; never if it rolls back."""


class Store(Protocol):
    """A configured store: units of work, the queue's own operations, and its lifecycle."""

    on_enqueue: Callable[[int], None] | None  # told how many jobs each unit enqueued (metrics)

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

    def ping(self) -> None:
        """Raise :class:`tidings.exceptions.StoreUnavailable` unless the store answers."""

    def migrate(self) -> None:
        """Create or upgrade the store's schema."""

    def check_schema(self) -> None:
        """Raise :class:`tidings.exceptions.SchemaOutOfDate` if a migration is missing."""

    def close(self) -> None:
        """Release connections."""

__all__ = ["EventStore", "GraphStore", "InboxStore", "JobAdmin", "JobQueue", "MailStore",
           "Notifier", "SettingsStore", "Store", "TimelineStore", "Tx"]
