"""Bundle hashes (which notifications may be shown as one) and count displays."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from tidings.domain.audience import more_personal
from tidings.domain.flags import SAVED
from tidings.domain.readstate import Markers
from tidings.domain.views import BundleBase, Delivery, GroupInfo, NewNotification

UNREAD_CAP = 100
OTHERS_CAP = 99


def bundle_hash(rule: str, event_type: str, actor: str | None, obj: str | None,
                event_id: int) -> str:
    """The hash that groups one user's notifications of this event with others.

    ``none`` gives every event its own hash, so it never bundles.
    """
    if rule == "none":
        key = f"event\x00{event_id}"
    elif rule == "object":
        key = f"object\x00{event_type}\x00{obj or ''}"
    elif rule == "actor":
        key = f"actor\x00{event_type}\x00{actor or ''}"
    else:
        key = f"actor_object\x00{event_type}\x00{actor or ''}\x00{obj or ''}"
    return hashlib.sha1(key.encode()).hexdigest()[:16]


def bundles_alone(bundle: str, event_id: int) -> bool:
    """Whether ``bundle`` is the hash a type that never bundles gives its event (rule
    ``none``): no other notification shares it, so no later one looks for its group."""
    return bundle == bundle_hash("none", "", None, None, event_id)


def display_hash(bundle: str, first_event_id: int) -> str:
    """A display group starts with its first event; later members reuse its hash."""
    return hashlib.sha1(f"{bundle}\x00{first_event_id}".encode()).hexdigest()[:16]


def count_display(count: int, cap: int = UNREAD_CAP) -> str:
    """'7' or, from ``cap`` on, '99+'."""
    return f"{cap - 1}+" if count >= cap else str(count)


ACTOR_SCAN = 500  # Echo's LIMIT for "X and N others": enough to find 99+ distinct actors


@dataclass(frozen=True)
class Placement:
    """Where a new notification goes: its display group, whether it joins that group (the old
    base steps down) and the date it is stored with."""

    group: str
    joins: bool
    created_at: int


def join_or_start(bundle: str, event_id: int, at: int, base: BundleBase | None,
                  base_unread: bool, *, backfill: bool = False) -> Placement:
    """Echo's rule: which display group a new notification goes into.

    It joins the newest group of its bundle while that group is unread; otherwise it starts a
    group of its own. A live notification is dated ``at`` (its event's time) but never before
    the bundle's newest base: a unit that took its time and then waited for another one
    deciding for the same bundle still lands on top, so the base stays the group's newest
    member.

    A back-filled notification (imported history, dated ``at`` in the past) keeps its date and
    must not hijack a live bundle: it only joins a group whose base is older than itself (so
    it becomes that group's newest member), and never demotes a newer base. Give it the newest
    base *before* it (``InboxStore.bundle_bases(before=…)``).
    """
    if backfill:
        older = base is not None and (base.created_at, base.event_id) < (at, event_id)
        if base is not None and older and base_unread:
            return Placement(base.display_hash, True, at)
        return Placement(display_hash(bundle, event_id), False, at)
    created = at if base is None else max(at, base.created_at + 1)
    if base is not None and base_unread:
        return Placement(base.display_hash, True, created)
    return Placement(display_hash(bundle, event_id), False, created)


def place(delivery: Delivery, base: BundleBase | None, markers: Markers | None) -> Placement:
    """The bundling rule for one user: where that user's notification of ``delivery`` goes,
    given the newest base of its bundle (``base``, None: none; for a back-fill, the newest
    one before it) and the user's watermarks (``markers``, None: none), by
    :func:`join_or_start` on that base judged unread under them. A type that never bundles
    (``delivery.bundled`` False) is given no base: each notification starts its own group."""
    if base is None:
        return join_or_start(delivery.bundle_hash, delivery.event_id, delivery.created_at,
                             None, False, backfill=delivery.backfill)
    unread = (markers or Markers()).is_unread(
        base.read_at, base.fresh_at, base.type, base.category, base.section,
        position=(base.created_at, base.event_id))
    return join_or_start(delivery.bundle_hash, delivery.event_id, delivery.created_at, base,
                         unread, backfill=delivery.backfill)


@dataclass
class Decided:
    """What :class:`Bundler` decided for one delivery: the rows to write (``rows``, in the
    order of the users given) and the (user, display hash) groups whose base steps down
    because a row joins them (``demoted``)."""

    rows: list[NewNotification]
    demoted: list[tuple[str, str]]


class Bundler:
    """The bundling rule over a sequence of deliveries, in order: each user's notification
    joins or starts a group (:func:`place`) against the newest base of its (user, bundle)
    pair as a store read it (``bases``) or as an earlier delivery of the sequence left it
    (so a later event sees the groups the earlier ones start or join), judged under the
    user's watermarks (``markers``).

    ``again``: the pairs a later delivery of the sequence decides for once more; only theirs
    are kept up to date (every pair, when None). A store reads ``bases`` for every pair it
    gives, and ``markers`` for every user whose pair has a base or is in ``again``."""

    def __init__(self, bases: Mapping[tuple[str, str], BundleBase],
                 markers: Mapping[str, Markers], *,
                 again: Collection[tuple[str, str]] | None = None) -> None:
        self.bases = dict(bases)
        self.markers = markers
        self.again = again

    def decide(self, delivery: Delivery, users: Sequence[str]) -> Decided:
        """The rows of ``delivery`` for ``users`` (who lack it), and the groups they join."""
        bundle = delivery.bundle_hash
        # a user with no base starts a group of the same hash and date as every other such user
        alone = place(delivery, None, None)
        bases = self.bases
        if not delivery.bundled or not any((u, bundle) in bases for u in users):
            rows = delivery.rows(users, alone.group, alone.created_at, joined=False)
            if delivery.bundled:
                self._keep(delivery, rows, [False] * len(rows))
            return Decided(rows, [])
        rows, demoted, joins = [], [], []
        for user in users:
            base = bases.get((user, bundle))
            where = alone if base is None else place(delivery, base, self.markers.get(user))
            if where.joins:
                demoted.append((user, where.group))
            # a joining row carries its group's summary after the join where the base's is
            # known and the join keeps it exact
            group = summary_joined(base.group, delivery.actor) if where.joins and base else None
            row = delivery.row(user, where.group, where.created_at, joined=where.joins,
                               group=group)
            if where.joins and base is not None and base.flags:
                # the group's base shows the most personal reason among its members, and a
                # saved group stays saved (archived or snoozed, it comes back to the inbox)
                row = replace(row, flags=more_personal(row.flags, base.flags)
                              | (base.flags & SAVED))
            rows.append(row)
            joins.append(where.joins)
        self._keep(delivery, rows, joins)
        return Decided(rows, demoted)

    def _keep(self, delivery: Delivery, rows: Sequence[NewNotification],
              joins: Sequence[bool]) -> None:
        """Each row written becomes the newest base of its pair. Not a back-fill's: it
        decides against the newest base before its own place, read for it alone, so a
        Bundler that decides one is used for that delivery only."""
        if delivery.backfill:
            return
        again = self.again
        for row, joined in zip(rows, joins, strict=True):
            pair = (row.user_id, row.bundle_hash)
            if again is not None and pair not in again:
                continue
            self.bases[pair] = BundleBase(
                user_id=row.user_id, event_id=row.event_id, display_hash=row.display_hash,
                created_at=row.created_at, fresh_at=row.fresh_at, read_at=None,
                type=row.type, category=row.category, section=row.section,
                group=row.group if joined else summary_alone(row.actor), flags=row.flags)


# A display group's summary: its member count (up to ACTOR_SCAN) and its newest distinct
# actors (at most GROUP_ACTORS, the most recently active first) among those members.
Summary = tuple[int, tuple[str, ...]]
GROUP_ACTORS = OTHERS_CAP + 1  # enough to tell "99+ others"


def summary_of(members: Sequence[str | None]) -> Summary:
    """The summary of a group whose newest members (newest first) have these actors."""
    scanned = members[:ACTOR_SCAN]
    actors = tuple(dict.fromkeys(a for a in scanned if a is not None))[:GROUP_ACTORS]
    return len(scanned), actors


def summary_alone(actor: str | None) -> Summary:
    """The summary of a group of one row by ``actor``."""
    return 1, (() if actor is None else (actor,))


def summary_joined(base: Summary | None, actor: str | None) -> Summary | None:
    """The summary once a row by ``actor`` joins a group summarised as ``base``, as its newest
    member: exact while the group is within the scan (fewer than ``ACTOR_SCAN`` members
    before the join, so every member counts); None (the store reads the group's newest
    members) once the scan's window slides, or when ``base`` is not known."""
    if base is None or base[0] >= ACTOR_SCAN:
        return None
    count, actors = base
    if actor is None:
        return count + 1, actors
    return count + 1, (actor, *(a for a in actors if a != actor))[:GROUP_ACTORS]


def group_info(summary: Summary) -> GroupInfo:
    """The group info a page shows for a group of this summary."""
    count, actors = summary
    return GroupInfo(count=count, actors=list(actors), distinct_actors=len(actors))
