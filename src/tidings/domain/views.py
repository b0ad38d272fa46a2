"""The value types every layer shares: what the stores hand back and what readers receive.

They hold plain data (ints are microseconds since the epoch, ids are ints) and no behaviour
beyond small conversions, so a store of any kind can build them and any layer can read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from tidings.domain.readstate import Markers

T = TypeVar("T")
# why a notification arrived, as items say it (tidings.domain.flags.REASONS)
Reason = Literal["recipient", "mention", "subscribed", "following", "group"]
_new = object.__new__


@dataclass(frozen=True)
class StoredEvent:
    """An accepted event as stored: the source of truth every inbox row points at."""

    id: int
    type: str
    actor: str | None
    object: str | None
    payload: dict[str, Any]
    recipients: list[str]
    exclude: list[str]
    idempotency_key: str | None
    body_hash: str
    created_at: int
    retracted_at: int | None


@dataclass(frozen=True)
class Published:
    """What publish returns: the event's id and whether this call created it."""

    id: str
    created: bool
    status: str = "accepted"


@dataclass(frozen=True)
class Subscription:
    """(user, type or ``*``, object or ``*``) and the channels it asks for, until
    ``expires_at`` (µs; None: for good)."""

    id: int
    user: str
    type: str
    object: str
    channels: tuple[str, ...]
    created_at: int
    expires_at: int | None = None

    def live(self, now: int) -> bool:
        """Whether it still matches at ``now``."""
        return self.expires_at is None or self.expires_at > now


@dataclass(frozen=True)
class Follow:
    """One edge of the follow graph, seen from the user listing it."""

    user: str
    created_at: int


@dataclass(frozen=True)
class Member:
    """A member of a group (privacy rule ``group:NAME``), with the time they joined it."""

    user: str
    created_at: int


@dataclass(frozen=True)
class Filters:
    """What an inbox read or count is restricted to.

    Beside types, category, section and read state, Jiepang's query dimensions: the actor and
    the object of the notification, and its event id below ``max_id`` / above ``since_id``.
    """

    types: tuple[str, ...] | None = None
    category: str | None = None
    section: str | None = None
    unread: bool | None = None
    actor: str | None = None
    object: str | None = None
    max_id: int | None = None  # event id < max_id
    since_id: int | None = None  # event id > since_id
    # queryable payload fields (tidings.domain.fields): (name, value as text), all must hold
    fields: tuple[tuple[str, str], ...] = ()
    # the item's triage state (tidings.domain.flags.STATES; None: every row, whatever its
    # state): by default the inbox, neither archived nor snoozed
    state: str | None = "inbox"
    # why it arrived: one of these reasons (tidings.domain.flags.REASONS), None: any
    reasons: tuple[str, ...] | None = None


class InboxRow(NamedTuple):
    """A base row (the newest member of a display group) as an inbox list reads it. A named
    tuple, as the row it is: built, hashed and compared by the interpreter's tuple code, which
    a page of twenty rows read many times a second notices."""

    event_id: int
    user_id: str
    created_at: int
    fresh_at: int
    type: str
    category: str
    section: str
    actor: str | None
    object: str | None
    bundle_hash: str
    display_hash: str
    read_at: int | None
    payload: str  # the event's payload as stored JSON text; parsed only for listed items
    flags: int = 0  # the row's state bits (tidings.domain.flags): reason, archived, saved…
    snoozed_until: int | None = None  # while snoozed (flags.SNOOZED): until when, where read


@dataclass(frozen=True)
class BundleBase:
    """The newest base row of one user's bundle: what the join-or-start decision looks at."""

    user_id: str
    event_id: int
    display_hash: str
    created_at: int
    fresh_at: int
    read_at: int | None
    type: str
    category: str
    section: str
    # its group's summary (tidings.domain.bundling.Summary) where the store keeps it
    group: tuple[int, tuple[str, ...]] | None = None
    flags: int = 0  # its state bits (tidings.domain.flags): the group's reason among them


@dataclass(frozen=True)
class NewNotification:
    """One notification row to write (unique per (user, event))."""

    user_id: str
    event_id: int
    created_at: int
    type: str
    category: str
    section: str
    actor: str | None
    object: str | None
    bundle_hash: str
    display_hash: str
    fields: tuple[tuple[str, str], ...] = ()  # its event's queryable payload fields
    # False when it starts its display group: until another joins, the group is this row alone
    joined: bool = True
    # a joining row's group summary after it joins (bundling.summary_joined), where known
    group: tuple[int, tuple[str, ...]] | None = None
    # when it was delivered, if later than ``created_at`` (a live event whose fan-out ran
    # after it was published): the row's ``fresh_at``, what read state compares watermarks to
    delivered_at: int = 0
    # its state bits (tidings.domain.flags): why it arrived; on a join, the more personal of
    # its own reason and its group's (the base it succeeds)
    flags: int = 0

    @property
    def fresh_at(self) -> int:
        """The row's ``fresh_at``: its delivery, never before its date."""
        return max(self.created_at, self.delivered_at)


@dataclass(frozen=True)
class Delivery:
    """One event to write into many inboxes, with what the join-or-start decision needs.

    ``bundled`` is False for types that never bundle (each notification starts its own
    group). ``writer`` names the unit of work that delivers (a job): a store that cannot roll
    its writes back reports a row it wrote earlier for the same writer as written again, so a
    retried job schedules the same channels it did before its failure. ``backfill``: an
    imported event dated ``created_at`` in the past, which must not hijack a newer group
    (:func:`tidings.domain.bundling.join_or_start`). ``created_at`` is the event's own time
    (every inbox and timeline is ordered by it, then by event id); ``delivered_at`` the time
    of the delivery (a row's ``fresh_at``: read state compares it to the watermarks, so a row
    delivered after a "read up to" mark stays unread).
    """

    event_id: int
    created_at: int
    type: str
    category: str
    section: str
    actor: str | None
    object: str | None
    bundle_hash: str
    bundled: bool
    writer: str = ""
    backfill: bool = False
    fields: tuple[tuple[str, str], ...] = ()  # queryable payload fields (domain/fields.py)
    delivered_at: int = 0
    # each user's row's first flags: the bits of why it reached them (0 for a user not here)
    reasons: Mapping[str, int] = field(default_factory=dict)

    def row(self, user: str, display_hash: str, created_at: int | None = None, *,
            joined: bool = True, group: tuple[int, tuple[str, ...]] | None = None
            ) -> NewNotification:
        """The notification row of this delivery for ``user`` in display group
        ``display_hash`` (dated ``created_at`` when the bundling rule moved its date);
        ``joined`` False when the row starts that group; ``group`` the group's summary."""
        return NewNotification(
            user_id=user, event_id=self.event_id,
            created_at=self.created_at if created_at is None else created_at, type=self.type,
            category=self.category, section=self.section, actor=self.actor, object=self.object,
            bundle_hash=self.bundle_hash, display_hash=display_hash, fields=self.fields,
            joined=joined, group=group, delivered_at=self.delivered_at,
            flags=self.reasons.get(user, 0))

    def rows(self, users: Sequence[str], display_hash: str, created_at: int, *,
             joined: bool) -> list[NewNotification]:
        """:meth:`row` for each of ``users``, all in one group and dated alike (a fan-out's
        rows, thousands at a time): each row's attributes are set at once from one shared
        mapping, where a frozen dataclass's ``__init__`` sets its 12 fields one by one through
        ``object.__setattr__`` (about a third of the cost)."""
        shared = {"event_id": self.event_id, "created_at": created_at, "type": self.type,
                  "category": self.category, "section": self.section, "actor": self.actor,
                  "object": self.object, "bundle_hash": self.bundle_hash,
                  "display_hash": display_hash, "fields": self.fields, "joined": joined,
                  "group": None, "delivered_at": self.delivered_at}
        out: list[NewNotification] = []
        reasons = self.reasons
        for user in users:
            row: NewNotification = _new(NewNotification)
            attributes = row.__dict__
            attributes["user_id"] = user
            attributes.update(shared)
            attributes["flags"] = reasons.get(user, 0)
            out.append(row)
        return out


@dataclass(frozen=True)
class NotificationKey:
    """Enough of a stored notification to delete it and repair its display group."""

    user_id: str
    event_id: int
    display_hash: str
    bundle_base: bool


@dataclass(frozen=True)
class ReadState:
    """One stored notification's own read columns, judged against the user's watermarks."""

    event_id: int
    created_at: int
    read_at: int | None
    fresh_at: int
    type: str
    category: str
    section: str


@dataclass(frozen=True)
class GroupInfo:
    """A display group's member count (capped by the scan) and its newest distinct actors."""

    count: int
    actors: list[str]
    distinct_actors: int


@dataclass(frozen=True)
class PageView:
    """What a page of the inbox is drawn from: the user's watermarks, the base rows, and the
    group info of those rows whose type bundles (by display hash)."""

    markers: Markers
    rows: list[InboxRow]
    groups: dict[str, GroupInfo]


@dataclass(frozen=True)
class Newer:
    """The inbox items after a position (``(created_at, event id)``, the list's order), each
    with its own position, oldest first; ``top``, the inbox's newest position (None while it
    is empty); ``complete`` False when more than the limit asked for came after it (then
    ``items`` is empty: the caller reads the list again instead)."""

    items: list[tuple[tuple[int, int], Notification]]
    top: tuple[int, int] | None
    complete: bool


@dataclass(frozen=True)
class TimelineEntry:
    """One event in a user's timeline."""

    id: int
    type: str
    actor: str | None
    object: str | None
    payload: dict[str, Any]
    created_at: int


@dataclass(frozen=True)
class MailBatchRow:
    """A notification waiting for mail: in a bundling window (``bundle``) or a digest."""

    user_id: str
    event_id: int
    kind: str  # "bundle" | "digest"
    bundle_hash: str
    priority: int
    created_at: int
    id: int = 0  # set by the store once written


@dataclass(frozen=True)
class Notification:
    """One listed inbox item: a single notification or a bundle shown by its newest member."""

    id: str
    type: str
    category: str
    section: str
    object: str | None
    actor: str | None
    actors: list[str]
    count: int
    others: int
    title: str
    body: str | None
    link: str | None
    html: str
    created_at: str
    read: bool
    seen: bool
    payload: dict[str, Any]
    archived: bool = False
    saved: bool = False
    snoozed_until: str | None = None  # RFC 3339, while snoozed
    # why it arrived (tidings.domain.flags.REASONS); None where no reason was kept
    reason: Reason | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class BundleMember:
    """One member of a display group (a bundle opened): its own event, title in the
    singular, and read state."""

    id: str
    actor: str | None
    created_at: str
    read: bool
    title: str
    payload: dict[str, Any]
    reason: Reason | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list and the cursor of the next (None on the last page)."""

    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class UnreadCount:
    """Unread display groups, capped: ``display`` reads '99+' from the cap on."""

    count: int
    display: str


@dataclass
class Counters:
    """What this process delivered and how its jobs ended (for tests and metrics)."""

    delivered: int = 0
    jobs: dict[str, int] = field(default_factory=dict)
