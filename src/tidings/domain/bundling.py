"""Bundle hashes (which notifications may be shown as one) and count displays."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from tidings.domain.views import BundleBase, GroupInfo

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
    return hashlib.sha1(key.encode()).hexdigest()[:32]


def display_hash(bundle: str, first_event_id: int) -> str:
    """A display group starts with its first event; later members reuse its hash."""
    return hashlib.sha1(f"{bundle}\x00{first_event_id}".encode()).hexdigest()[:32]


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
