"""``InboxStore.deliver`` for stores with transactions, as the port's smaller steps.

A transactional store (SQL, memory) delivers by reading the bundle bases (locked where the
store has row locks), skipping users who hold the event, applying
:func:`tidings.domain.bundling.join_or_start` and writing: every step inside the caller's unit.
The Redis store runs the same rule in one Lua script per user instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tidings.domain.bundling import join_or_start
from tidings.domain.readstate import Markers
from tidings.domain.views import BundleBase, Delivery, NewNotification


class Steps(Protocol):
    """The inbox steps a stepwise delivery is made of (a subset of ``InboxStore``)."""

    def bundle_bases(self, users: Sequence[str], bundle_hash: str, *,
                     before: tuple[int, int] | None = None) -> dict[str, BundleBase]: ...
    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]: ...
    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]: ...
    def demote(self, groups: Sequence[tuple[str, str]]) -> None: ...
    def insert(self, rows: Sequence[NewNotification]) -> None: ...


def deliver(inbox: Steps, delivery: Delivery, users: Sequence[str]) -> list[str]:
    """Write ``delivery`` to those of ``users`` who lack it; return them."""
    candidates = sorted(set(users))
    if not candidates:
        return []
    bhash = delivery.bundle_hash
    # a back-filled event looks only at groups older than itself
    before = (delivery.created_at, delivery.event_id) if delivery.backfill else None
    bases = inbox.bundle_bases(candidates, bhash, before=before) if delivery.bundled else {}
    existing = inbox.delivered(delivery.event_id, candidates)
    fresh = [u for u in candidates if u not in existing]
    if not fresh:
        return []
    markers = inbox.load_markers_many([u for u in fresh if u in bases]) if bases else {}
    rows: list[NewNotification] = []
    demote: list[tuple[str, str]] = []
    # a user with no base starts a group of the same hash and date as every other such user
    alone = join_or_start(bhash, delivery.event_id, delivery.created_at, None, False,
                          backfill=delivery.backfill)
    for user in fresh:
        base = bases.get(user)
        if base is None:
            place = alone
        else:
            unread = markers.get(user, Markers()).is_unread(
                base.read_at, base.fresh_at, base.type, base.category, base.section,
                position=(base.created_at, base.event_id))
            place = join_or_start(bhash, delivery.event_id, delivery.created_at, base, unread,
                                  backfill=delivery.backfill)
        if place.joins:
            demote.append((user, place.group))
        rows.append(delivery.row(user, place.group, place.created_at, joined=place.joins))
    inbox.demote(demote)
    inbox.insert(rows)
    return [r.user_id for r in rows]
