"""``InboxStore.deliver`` for stores with transactions, as the port's smaller steps.

A transactional store (SQL, memory) delivers by reading the bundle bases (locked where the
store has row locks), skipping users who hold the event, applying
:func:`tidings.domain.bundling.join_or_start` and writing: every step inside the caller's unit.
The Redis store runs the same rule in one Lua script per user instead.

:func:`deliver_many` delivers several events in order as :func:`deliver` one by one would,
with each step taken once for all of them (see there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from tidings.domain.bundling import Placement, join_or_start, summary_alone, summary_joined
from tidings.domain.readstate import Markers
from tidings.domain.views import BundleBase, Delivery, NewNotification


class Steps(Protocol):
    """The inbox steps a stepwise delivery is made of (``InboxStore``'s, and
    ``bundle_bases_many``: :meth:`InboxStore.bundle_bases` of many (user, bundle) pairs,
    keyed by pair, the pairs locked in their order)."""

    def bundle_bases(self, users: Sequence[str], bundle_hash: str, *,
                     before: tuple[int, int] | None = None) -> dict[str, BundleBase]: ...
    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]: ...
    def held(self, event_ids: Sequence[int]) -> set[int]: ...
    def bundle_bases_many(self, pairs: Sequence[tuple[str, str]]
                          ) -> dict[tuple[str, str], BundleBase]: ...
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
    if not bases:  # nobody has a group to join: every row starts one, alike
        rows = delivery.rows(fresh, alone.group, alone.created_at, joined=False)
    else:
        for user in fresh:
            base = bases.get(user)
            place = _placement(delivery, base, markers.get(user), alone)
            if place.joins:
                demote.append((user, place.group))
            rows.append(_row(delivery, user, place, base))
    inbox.demote(demote)
    inbox.insert(rows)
    return [r.user_id for r in rows]


def deliver_many(inbox: Steps, items: Sequence[tuple[Delivery, Sequence[str]]]
                 ) -> list[list[str]]:
    """:func:`deliver` of each item in order, set-based: one read of which events anyone holds
    already (usually none: then nobody is looked up), the (user, bundle) pairs of every
    bundled event locked and their newest bases read at once, the decisions made here in
    order (a later event sees the groups the earlier ones start or join), and the rows written
    in *waves*: a wave ends before an event that decides for a pair an event of the wave
    decided for, so each wave is one demotion and one insert. Back-filled bundled events
    (they look only at older groups) go one by one, as :func:`deliver`."""
    if any(d.bundled and d.backfill for d, _ in items):
        return [deliver(inbox, d, users) if d.bundled else deliver_many(inbox, [(d, users)])[0]
                for d, users in items]
    given: set[tuple[int, str]] = set()  # an event given twice is written once
    wanted: list[tuple[Delivery, list[str]]] = []
    for d, users in items:
        wanted.append((d, [u for u in sorted(set(users)) if (d.event_id, u) not in given]))
        given.update((d.event_id, u) for u in users)
    events = sorted({d.event_id for d, users in wanted if users})
    held = inbox.held(events) if events else set()
    pairs = sorted({(u, d.bundle_hash) for d, users in wanted if d.bundled for u in users})
    bases = inbox.bundle_bases_many(pairs) if pairs else {}
    # every bundled user's, not only theirs with a base now: a group this batch starts is
    # judged under them too
    markers = inbox.load_markers_many(sorted({u for u, _ in pairs})) if pairs else {}
    wave = _Wave(inbox)
    results: list[list[str]] = []
    for d, candidates in wanted:
        if d.event_id in held and candidates:
            existing = inbox.delivered(d.event_id, candidates)
            candidates = [u for u in candidates if u not in existing]
        results.append(candidates)
        # a user with no base starts a group of the same hash and date as every other such user
        alone = join_or_start(d.bundle_hash, d.event_id, d.created_at, None, False)
        if not d.bundled:  # no base to join (as deliver() finds for a type that never bundles)
            wave.rows += d.rows(candidates, alone.group, alone.created_at, joined=False)
            continue
        mine = {(u, d.bundle_hash) for u in candidates}
        if not mine.isdisjoint(wave.pairs):
            wave.write()
        wave.pairs |= mine
        for user in candidates:
            base = bases.get((user, d.bundle_hash))
            place = _placement(d, base, markers.get(user), alone)
            if place.joins:
                wave.demote.append((user, place.group))
            row = _row(d, user, place, base)
            wave.rows.append(row)
            bases[(user, d.bundle_hash)] = BundleBase(
                user_id=user, event_id=d.event_id, display_hash=place.group,
                created_at=place.created_at, fresh_at=row.fresh_at, read_at=None,
                type=d.type, category=d.category, section=d.section,
                group=row.group if place.joins else summary_alone(d.actor))
    wave.write()
    return results


def _row(delivery: Delivery, user: str, place: Placement, base: BundleBase | None
         ) -> NewNotification:
    """The row ``place`` gives ``user``; a joining row carries its group's summary after the
    join where the base's is known and the join keeps it exact (``summary_joined``)."""
    group = summary_joined(base.group, delivery.actor) if place.joins and base else None
    return delivery.row(user, place.group, place.created_at, joined=place.joins, group=group)


def _placement(delivery: Delivery, base: BundleBase | None, markers: Markers | None,
               alone: Placement) -> Placement:
    """Where one user's row of ``delivery`` goes: ``alone`` (a group of its own) without a
    base, else :func:`join_or_start` on that base, judged unread under ``markers``."""
    if base is None:
        return alone
    unread = (markers or Markers()).is_unread(
        base.read_at, base.fresh_at, base.type, base.category, base.section,
        position=(base.created_at, base.event_id))
    return join_or_start(delivery.bundle_hash, delivery.event_id, delivery.created_at, base,
                         unread, backfill=delivery.backfill)


class _Wave:
    """Rows decided but not written yet, with the groups they demote and the (user, bundle)
    pairs they decided for."""

    def __init__(self, inbox: Steps) -> None:
        self.inbox = inbox
        self.rows: list[NewNotification] = []
        self.demote: list[tuple[str, str]] = []
        self.pairs: set[tuple[str, str]] = set()

    def write(self) -> None:
        if self.demote:
            self.inbox.demote(self.demote)
        if self.rows:
            self.inbox.insert(self.rows)
        self.rows, self.demote, self.pairs = [], [], set()


def bases_by_pair(bundle_bases: Callable[[Sequence[str], str], dict[str, BundleBase]],
                  pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], BundleBase]:
    """``bundle_bases_many`` from ``bundle_bases``: one call per bundle."""
    users: dict[str, list[str]] = {}
    for user, bundle in sorted(set(pairs), key=lambda p: (p[1], p[0])):
        users.setdefault(bundle, []).append(user)
    return {(user, bundle): base for bundle, mine in users.items()
            for user, base in bundle_bases(mine, bundle).items()}
