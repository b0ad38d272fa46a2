"""Ports of what users read: inboxes (with their watermarks) and timelines."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from tidings.domain.readstate import Markers
from tidings.domain.timeline import Candidate, Position, ReadPlan
from tidings.domain.views import (
    BundleBase,
    Delivery,
    Filters,
    GroupInfo,
    InboxRow,
    NewNotification,
    NotificationKey,
    PageView,
    ReadState,
    TimelineEntry,
)


class ReadMarkers(Protocol):
    """A user's read watermarks (Gazelle's narrow rows): read, moved forward, placed."""

    def load_markers(self, user: str) -> Markers:
        """A user's watermarks (absent: all zero)."""

    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]:
        """Watermarks of those users who have any."""

    def set_marker(self, user: str, scope: str, until: int) -> None:
        """Move a watermark forward to ``until`` (never back)."""

    def set_position(self, user: str, position: tuple[int, int], until: int) -> bool:
        """Mark read every notification at or below ``position`` (created_at, event id) that
        is fresh at ``until``: one watermark row (scope ``position``). Moves forward only:
        False, writing nothing, if the current mark is further on."""

    def position_of(self, user: str, event_id: int) -> tuple[int, int] | None:
        """Where the user's notification of this event sits: (created_at, event id)."""


class InboxWrites(Protocol):
    """Delivering notifications: the bundling primitives (bases, demote, insert) and
    the composite over them (``deliver_many``), idempotent per (user, event)."""

    def bundle_bases(self, users: Sequence[str], bundle_hash: str, *,
                     before: tuple[int, int] | None = None) -> dict[str, BundleBase]:
        """Per user, the newest base row of this bundle; with ``before`` (a back-filled
        notification's (created_at, event id)), the newest one strictly before that place.

        Serialises deciders: the unit that calls it holds the right to decide for these
        (user, bundle) pairs until it ends. Another unit asking for any of the same pairs
        waits until then and sees what the first one wrote, so two concurrent units never both
        start a display group of one user's bundle."""

    def bundle_bases_many(self, pairs: Sequence[tuple[str, str]]
                          ) -> dict[tuple[str, str], BundleBase]:
        """:meth:`bundle_bases` of many (user, bundle hash) pairs at once, keyed by pair, the
        pairs' deciders serialised in the pairs' order."""

    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]:
        """Those of ``users`` who already hold a notification of this event."""

    def held(self, event_ids: Sequence[int]) -> set[int]:
        """Those of the events of which any user holds a notification (one read for all)."""

    def insert(self, rows: Sequence[NewNotification]) -> None:
        """Write base rows; a (user, event) already stored is skipped. Registers the users
        written to (as ``GraphStore.add_user`` would, dated with their row, no watermark);
        nothing else per user (no count: :meth:`over_cap` reads the rows)."""

    def hold(self, users: Sequence[str]) -> None:
        """Before a unit writes to these users' inboxes in several steps (a batch of events),
        take what keeps units that do so for overlapping users from deadlocking: each step
        locks its users in order, but two units' steps interleave in different orders. A
        store without row locks does nothing."""

    def over_cap(self, users: Sequence[str], cap: int) -> list[str]:
        """Those of ``users`` who hold more than ``cap`` notifications, exactly, sorted. It
        may read up to ``cap`` + 1 rows per user: for a few users at a time (the trim job, the
        inboxes a batch's early deliveries check), not for every delivery — fan-out checks
        about one delivery in a margin per user (:mod:`tidings.domain.inboxcap`)."""

    def demote(self, groups: Sequence[tuple[str, str]]) -> None:
        """(user, display hash) groups whose current base row stops being the base."""

    def deliver_many(self, items: Sequence[tuple[Delivery, Sequence[str]]]) -> list[list[str]]:
        """Write each (delivery, users) item, in order, into those users' inboxes; return the
        users newly written by each (an event given twice: its users once).

        A user who already holds the event is skipped (and not returned, unless the row was
        written by the same ``delivery.writer``: a retried job). Each new row joins the
        newest display group of its bundle while that group is unread, else starts a group of
        its own: the domain's rule (:class:`tidings.domain.bundling.Bundler`), judged on the
        user's stored watermarks, a later item seeing the groups an earlier one started or
        joined. A composite over this port's primitives, written once
        (``tidings.store.stepwise.deliver_many``: ``held``, ``bundle_bases_many``,
        ``delivered``, ``load_markers_many``, then ``demote`` and ``insert``); a store without
        transactions (Redis) overrides it with the same rule per user as one atomic
        server-side step.
        """


class InboxReads(Protocol):
    """Reading an inbox: pages, counts, groups and the keys of stored notifications."""

    def keys_of(self, user: str, event_ids: Sequence[int]) -> list[NotificationKey]:
        """The user's own stored notifications of these events."""

    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]:
        """Base rows newest first by (created_at, event id), strictly before ``before``,
        matching every filter (types, category, section, read state under ``markers``, actor,
        object, event id below ``max_id`` and above ``since_id``); rows whose event is gone
        are not listed."""

    def group_info(self, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]:
        """Member count (up to the actor scan) and newest distinct actors per display group."""

    def members(self, user: str, event_id: int, *, limit: int,
                before: tuple[int, int] | None) -> list[InboxRow] | None:
        """The members of the display group that holds the user's notification of
        ``event_id`` (any member's id, the base's or an older one's), newest first by
        (created_at, event id), strictly before ``before``, at most ``limit``; each row with
        its own read columns. A group of a type that does not bundle is its one row. None
        when the user holds no notification of that event; rows whose event is gone are not
        listed."""

    def page_view(self, user: str, filters: Filters, *, limit: int,
                  before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
        """What :meth:`load_markers`, then :meth:`page` under those markers, then
        :meth:`group_info` of the listed rows whose type ``bundles`` return, in one read where
        the store can (one statement on PostgreSQL)."""

    def unread_count(self, user: str, filters: Filters, markers: Markers | None = None, *,
                     unseen: bool = False) -> int:
        """Unread base rows matching ``filters``, counted up to the cap; ``markers`` None: the
        store reads the user's watermarks itself (on SQL in the same statement). ``unseen``:
        only those also newer than the seen watermark (:meth:`Markers.unseen`), a badge's
        count."""

    def unread_counts(self, user: str, filters: Filters) -> tuple[int, int]:
        """:meth:`unread_count` and its ``unseen`` form, read together (one statement on
        SQL): what a badge shows."""

    def groups_by_ids(self, user: str, event_ids: Sequence[int]) -> list[str]:
        """Display groups holding any of these events."""

    def groups_by_match(self, user: str, *, actor: str | None, type: str | None,
                        object: str | None) -> list[str]:
        """Display groups holding a notification matching every given field."""

    def keys_by_match(self, user: str, *, actor: str | None, type: str | None,
                      object: str | None) -> list[NotificationKey]:
        """The user's notifications matching every given field (none given: none)."""

    def read_states(self, user: str, event_ids: Sequence[int]) -> list[ReadState]:
        """The read columns of the user's notifications of these events."""

    def keys_for_events(self, event_ids: Sequence[int]) -> list[NotificationKey]:
        """Every stored notification of these events."""


class InboxUpkeep(Protocol):
    """Changing what is stored: per-group read state, removal, the cap, housekeeping."""

    def mark_groups(self, user: str, groups: Sequence[str], *, read: bool, now: int,
                    markers: Markers) -> int:
        """Mark every member read (or unread again); return how many groups changed state."""

    def set_flags(self, user: str, groups: Sequence[str], *, on: int = 0, off: int = 0,
                  snoozed_until: int | None = None) -> int:
        """On every row of these display groups of ``user``, set the bits ``on`` and clear
        the bits ``off`` of its ``flags`` (:mod:`tidings.domain.flags`; the other bits are
        left as they are). With SNOOZED in ``on``, ``snoozed_until`` (µs) is kept as the
        groups' time to return; with SNOOZED in ``off`` that time is forgotten. Returns how
        many of the groups' base rows changed."""

    def snoozes(self, user: str, groups: Sequence[str]) -> dict[str, int]:
        """The time to return of those of ``user``'s display groups that are snoozed, by
        display hash."""

    def saved(self, keys: Sequence[NotificationKey]) -> list[NotificationKey]:
        """Those of ``keys`` whose row is saved (flags.SAVED): what retention keeps."""

    def remove(self, keys: Sequence[NotificationKey]) -> int:
        """Delete notifications; a group that loses its base gets its next newest member as
        base. Returns rows deleted."""

    def trim(self, user: str, cap: int) -> int:
        """Keep a user's newest ``cap`` notifications by (created_at, event id), saved ones
        before the others (:func:`tidings.domain.flags.beyond_cap`), delete the
        rest (a group losing its base gets its next newest member as base); return rows
        deleted (0, having only read, for a user who holds no more than ``cap``)."""

    def forget_bundle_locks(self, before: int, limit: int) -> int:
        """Drop up to ``limit`` items of the state that serialises :meth:`bundle_bases`
        made before ``before`` (a store that keeps none returns 0); return how many went."""

    def compact_history(self, now: int) -> int:
        """Keep the history a store has of its own writes bounded (the Redis hot store's
        journal, folded into a snapshot at most once a day: ``docs/redis.md``); a store
        that keeps none returns 0. Returns how many history rows went."""


class Reachability(Protocol):
    """Where an inbox lives on servers that can be away apart (a Redis Cluster): who is
    unreachable now, and the event index written later. A store on one server answers that
    everyone is reachable and keeps no separate index."""

    def unreachable(self, users: Sequence[str]) -> set[str]:
        """Those of ``users`` whose inboxes live on a server known to be away now (a Redis
        Cluster node that timed out and has not answered since): fan-out leaves them to a
        later job and serves the others. A store on one server answers none: its outage
        fails the whole unit."""

    def index_unreachable(self, event_id: int) -> bool:
        """Whether the event's index of holders lives on a server known to be away now (as
        :meth:`unreachable`); a store without such an index answers False."""

    def index_later(self, event_id: int) -> None:
        """This unit's deliveries of the event leave its index of holders alone: the caller
        carries the users it delivered to and gives them to :meth:`index` later."""

    def index(self, event_id: int, users: Sequence[str]) -> None:
        """Name ``users`` (who hold a notification of the event) in its index of holders."""


class InboxStore(ReadMarkers, InboxWrites, InboxReads, InboxUpkeep, Reachability, Protocol):
    """An inbox as a unit of work hands it out: notification rows with their bundling
    columns, and the read watermarks — the five ports above together."""


class TimelineStore(Protocol):
    """Push-model timelines: events written into followers' mailboxes, each with a floor
    (the position at or below which the mailbox is not complete: trimmed, or older than a
    back-fill) under which reads pull from the events instead. A position is (created_at,
    event id), the one order of every timeline, newest first (``tidings.domain.timeline``).

    A mailbox capped at N holds between N and the high-water mark
    (:func:`tidings.domain.timeline.high_water`) entries once it has filled: a write trims it
    only past the mark, back to N. A read given the cap shows the newest N held entries
    exactly: the rest lie at or below its floor (:meth:`head`), so the reader pulls them."""

    def push(self, event_id: int, users: Sequence[str], created_at: int) -> None:
        """Write the event (created at ``created_at``) into these users' timelines;
        idempotent."""

    def push_many(self, entries: Sequence[tuple[int, Sequence[str], int]]) -> None:
        """:meth:`push` of several (event id, users, created_at) entries, in one write where
        the store can; idempotent."""

    def push_capped(self, entries: Sequence[tuple[int, Sequence[str], int]], cap: int) -> None:
        """:meth:`push_many`, then :meth:`cap` over the mailboxes written: the fan-out's write,
        in one step where the store can; idempotent. A mailbox under the high-water mark is
        not looked at beyond its entries and its bound."""

    def fill(self, user: str, entries: Sequence[tuple[int, int]]) -> None:
        """Write (event id, created_at) entries into one mailbox (a follow's back-fill);
        idempotent."""

    def page(self, user: str, *, limit: int, before: Position | None,
             after: Position | None = None, cap: int | None = None) -> list[TimelineEntry]:
        """Unretracted events newest first by position, strictly below ``before`` and
        strictly above ``after``; with ``cap``, among the newest ``cap`` entries held only."""

    def trim(self, user: str, cap: int) -> int:
        """Keep the newest ``cap`` entries (by position), raise the floor to the newest entry
        removed; return how many went."""

    def cap(self, users: Sequence[str], cap: int) -> int:
        """:meth:`trim` those of ``users`` whose mailbox may hold more than the high-water
        mark of ``cap`` (cheap for the others); return how many entries went. Stores that keep
        only a bound of the size may remove a few more than needed (the floor covers them)."""

    def floor(self, user: str) -> Position:
        """The mailbox's floor (``START``, (0, 0): complete from the start)."""

    def head(self, user: str, *, limit: int, before: Position | None,
             after: Position | None, cap: int | None = None
             ) -> tuple[Position, list[TimelineEntry]]:
        """The floor and :meth:`page` strictly above both ``after`` and the floor, in one
        read where the store can (a timeline read's first step). With ``cap``, the floor as
        the read sees it: raised to the newest entry beyond the newest ``cap`` held (where a
        store that keeps only a bound of the size counts from the bound, a few more may be
        below it)."""

    def merged(self, user: str, plan: ReadPlan, *, limit: int, below: Position | None,
               above: Position | None
               ) -> tuple[list[Candidate], list[tuple[str, str]]] | None:
        """A timeline read's step in one round trip where the store can, else None (the
        reader then takes :meth:`head`, ``GraphStore.followee_sources`` and
        ``EventStore.pull_page`` one by one): the newest ``limit`` distinct unretracted
        events strictly between the positions ``above`` and ``below`` among the mailbox's
        (above its floor, as :meth:`head` with ``plan.cap`` sees it) and those of
        ``plan.types`` each followee posted up to its cut (``tidings.domain.timeline.pull_cut``
        under ``plan``), newest first, a mailbox copy winning over a pulled one; and the
        reader's mutes (``GraphStore.mutes``)."""

    def raise_floor(self, user: str, floor: Position) -> None:
        """Move the floor up to ``floor`` (never down)."""

    def remove_source(self, user: str, actor: str) -> int:
        """Delete the entries of ``actor``'s events (an unfollow); return how many went."""
