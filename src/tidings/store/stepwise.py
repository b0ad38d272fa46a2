"""``InboxStore.deliver`` for stores with transactions, as the port's smaller steps.

A transactional store (SQL, memory) delivers by reading the bundle bases (locked where the
store has row locks), skipping users who hold the event, applying
:func:`tidings.domain.bundling.join_or_start` and writing: every step inside the caller's unit.
The Redis store runs the same rule in one Lua script per user instead.

:func:`deliver_many` delivers several events in order as :func:`deliver` one by one would; a
run of events that never bundle is written in one step, as nothing in it depends on what the
others write: each row starts a group of its own, and the events are distinct.
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
    def held(self, event_ids: Sequence[int]) -> set[int]: ...
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


def deliver_many(inbox: Steps, items: Sequence[tuple[Delivery, Sequence[str]]]
                 ) -> list[list[str]]:
    """:func:`deliver` of each item in order; the rows of every event that never bundles are
    written together, after one read of which of those events any user holds already
    (usually none: then nobody is looked up)."""
    results: list[list[str]] = []
    plain = sorted({d.event_id for d, users in items if not d.bundled and users})
    held = inbox.held(plain) if plain else set()
    rows: list[NewNotification] = []
    written: set[tuple[int, str]] = set()  # an event given twice is written once
    for delivery, users in items:
        if delivery.bundled:
            results.append(deliver(inbox, delivery, users))
            continue
        event = delivery.event_id
        candidates = [u for u in sorted(set(users)) if (event, u) not in written]
        if event in held and candidates:
            existing = inbox.delivered(event, candidates)
            candidates = [u for u in candidates if u not in existing]
        written.update((event, u) for u in candidates)
        # no base to join (as deliver() finds for a type that never bundles), back-filled or not
        alone = join_or_start(delivery.bundle_hash, delivery.event_id, delivery.created_at,
                              None, False)
        rows += [delivery.row(u, alone.group, alone.created_at, joined=False)
                 for u in candidates]
        results.append(candidates)
    inbox.insert(rows)
    return results


