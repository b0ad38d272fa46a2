"""Ports of what users read: inboxes (with their watermarks) and timelines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tidings.domain.readstate import Markers
from tidings.domain.views import (
    BundleBase,
    Delivery,
    Filters,
    GroupInfo,
    InboxRow,
    NewNotification,
    NotificationKey,
    ReadState,
    TimelineEntry,
)


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

    def deliver(self, delivery: Delivery, users: Sequence[str]) -> list[str]:
        """Write one event into these users' inboxes; return the users newly written.

        A user who already holds the event is skipped (and not returned, unless the row was
        written by the same ``delivery.writer``: a retried job). Each new row joins the
        newest display group of its bundle while that group is unread, else starts a group of
        its own: :func:`tidings.domain.bundling.join_or_start`, judged on the user's stored
        watermarks. Stores with transactions run it as the steps above (``bundle_bases``,
        ``delivered``, ``demote``, ``insert``); a store without them (Redis) runs the same
        rule per user as one atomic server-side step.
        """

    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]:
        """Base rows newest first by (created_at, event id), strictly before ``before``,
        matching every filter (types, category, section, read state under ``markers``, actor,
        object, event id below ``max_id`` and above ``since_id``); rows whose event is gone
        are not listed."""

    def group_info(self, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]:
        """Member count (up to the actor scan) and newest distinct actors per display group."""

    def unread_count(self, user: str, filters: Filters, markers: Markers | None = None, *,
                     unseen: bool = False) -> int:
        """Unread base rows matching ``filters``, counted up to the cap; ``markers`` None: the
        store reads the user's watermarks itself (on SQL in the same statement). ``unseen``:
        only those also newer than the seen watermark (:meth:`Markers.unseen`), a badge's
        count."""

    def groups_by_ids(self, user: str, event_ids: Sequence[int]) -> list[str]:
        """Display groups holding any of these events."""

    def groups_by_match(self, user: str, *, actor: str | None, type: str | None,
                        object: str | None) -> list[str]:
        """Display groups holding a notification matching every given field."""

    def keys_by_match(self, user: str, *, actor: str | None, type: str | None,
                      object: str | None) -> list[NotificationKey]:
        """The user's notifications matching every given field (none given: none)."""

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
