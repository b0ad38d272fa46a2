"""The memory store's tables and the undo journal that makes a unit of work atomic.

Every table is a dict of immutable rows (frozen dataclasses, tuples, ints or JSON text), so a
write is always "put this key" or "drop this key". A unit writes through its :class:`Journal`,
which remembers how to put each key back; rolling back replays that log in reverse. The cost
of a unit is the size of what it changed, never the size of the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tidings.domain.push import PushSubscription
from tidings.domain.timeline import SourceState
from tidings.domain.views import MailBatchRow, Subscription
from tidings.jobs.model import Failure

K = TypeVar("K")
V = TypeVar("V")
K2 = TypeVar("K2")


class ReadOnlyUnit(RuntimeError):
    """A write was attempted in a unit opened with ``Store.read()``."""


class Journal:
    """The undo log of one unit of work."""

    def __init__(self, *, writable: bool) -> None:
        self.writable = writable
        self._undo: list[Callable[[], None]] = []

    def _check(self) -> None:
        if not self.writable:
            raise ReadOnlyUnit("a unit opened for reading cannot write")

    def put(self, table: dict[K, V], key: K, value: V) -> None:
        """``table[key] = value``, undoable."""
        self._check()
        if key in table:
            old = table[key]
            self._undo.append(lambda: table.__setitem__(key, old))
        else:
            def forget() -> None:
                del table[key]

            self._undo.append(forget)
        table[key] = value

    def drop(self, table: dict[K, V], key: K) -> V | None:
        """Remove ``key`` if present and return its value, undoable."""
        self._check()
        if key not in table:
            return None
        old = table.pop(key)
        self._undo.append(lambda: table.__setitem__(key, old))
        return old

    def put_in(self, table: dict[K, dict[K2, V]], outer: K, key: K2, value: V) -> None:
        """``table[outer][key] = value``, creating the inner dict if needed."""
        inner = table.get(outer)
        if inner is None:
            inner = {}
            self.put(table, outer, inner)
        self.put(inner, key, value)

    def drop_in(self, table: dict[K, dict[K2, V]], outer: K, key: K2) -> V | None:
        inner = table.get(outer)
        return None if inner is None else self.drop(inner, key)

    def next_id(self, seq: dict[str, int], name: str) -> int:
        value = seq.get(name, 0) + 1
        self.put(seq, name, value)
        return value

    def rollback(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


@dataclass(frozen=True)
class EventRow:
    id: int
    type: str
    actor: str | None
    object: str | None
    payload: str  # JSON text, as stored
    recipients: tuple[str, ...]
    exclude: tuple[str, ...]
    idempotency_key: str | None
    body_hash: str
    created_at: int
    retracted_at: int | None
    idempotency_scope: str = ""


@dataclass(frozen=True)
class NoteRow:
    """One notification (user, event) with its bundling and read columns."""

    user_id: str
    event_id: int
    created_at: int
    fresh_at: int
    type: str
    category: str
    section: str
    actor: str | None
    object: str | None
    bundle_hash: str
    display_hash: str
    bundle_base: bool
    read_at: int | None
    fields: tuple[tuple[str, str], ...] = ()  # queryable payload fields, as delivered
    flags: int = 0  # its state bits (tidings.domain.flags): reason, archived, saved, snoozed
    snoozed_until: int | None = None  # its group's time to return, while snoozed


@dataclass(frozen=True)
class JobRow:
    id: int
    func: str
    args: str  # JSON text
    unique_key: str | None
    priority: int
    run_after: int
    grabbed_until: int
    attempts: int
    created_at: int


@dataclass(frozen=True)
class SentRow:
    message_id: str
    user_id: str
    kind: str
    address: str
    subject: str
    sent_at: int


@dataclass(frozen=True)
class WebhookRow:
    user_id: str
    event_id: int
    url: str
    status: int | None
    attempt: int
    error: str | None
    at: int


@dataclass
class State:
    """Every table of the store. Only a :class:`Journal` writes to them."""

    seq: dict[str, int] = field(default_factory=dict)
    # events
    events: dict[int, EventRow] = field(default_factory=dict)
    event_keys: dict[tuple[str, str], int] = field(default_factory=dict)  # (scope, key)
    # graph
    users: dict[str, int] = field(default_factory=dict)
    subscriptions: dict[int, Subscription] = field(default_factory=dict)
    subscription_keys: dict[tuple[str, str, str], int] = field(default_factory=dict)
    subscribers: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    following: dict[str, dict[str, int]] = field(default_factory=dict)  # follower -> followee
    followers: dict[str, dict[str, int]] = field(default_factory=dict)  # followee -> follower
    mutes: dict[str, dict[tuple[str, str], None]] = field(default_factory=dict)
    groups: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> member -> since
    # inbox
    notes: dict[str, dict[int, NoteRow]] = field(default_factory=dict)
    holders: dict[int, dict[str, None]] = field(default_factory=dict)  # event -> users
    markers: dict[str, dict[str, int]] = field(default_factory=dict)
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)  # read up to a place
    # timeline
    timelines: dict[str, dict[int, int]] = field(default_factory=dict)
    timeline_floors: dict[str, tuple[int, int]] = field(default_factory=dict)
    timeline_sources: dict[str, SourceState] = field(default_factory=dict)
    # settings
    event_types: dict[str, str] = field(default_factory=dict)
    preferences: dict[str, str] = field(default_factory=dict)  # JSON text
    bounces: dict[str, tuple[str, int]] = field(default_factory=dict)
    # mail
    bundle_status: dict[tuple[str, str], int] = field(default_factory=dict)
    batch: dict[int, MailBatchRow] = field(default_factory=dict)
    batch_keys: dict[tuple[str, int], int] = field(default_factory=dict)
    sent: dict[int, SentRow] = field(default_factory=dict)
    webhooks: dict[int, WebhookRow] = field(default_factory=dict)
    webhook_endpoints: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Web Push: subscriptions by id, and the id of each endpoint's (by its hash)
    push_subscriptions: dict[int, PushSubscription] = field(default_factory=dict)
    push_endpoints: dict[str, int] = field(default_factory=dict)
    # jobs
    jobs: dict[int, JobRow] = field(default_factory=dict)
    job_keys: dict[str, int] = field(default_factory=dict)
    failures: dict[int, Failure] = field(default_factory=dict)
