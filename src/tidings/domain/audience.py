"""Audience rules (LiveJournal ESN): which sources name the users an event reaches."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tidings.domain.flags import REASON_MASK, reason_code

RECIPIENTS = "recipients"
OBJECT_SUBSCRIBERS = "object_subscribers"
ACTOR_FOLLOWERS = "actor_followers"
SOURCES = (RECIPIENTS, OBJECT_SUBSCRIBERS, ACTOR_FOLLOWERS)


@dataclass(frozen=True)
class AudienceSource:
    """A stored audience source of one event: subscribers of (type, object) or followers of
    the actor. Stores list its users in ascending id order, in ranges, for chunking."""

    kind: str
    type: str
    actor: str | None
    object: str | None
    # subscribers: only subscriptions that have not expired at this time (µs); None: all
    at: int | None = None

    @classmethod
    def of(cls, kind: str, type: str, actor: str | None, obj: str | None,
           at: int | None = None) -> AudienceSource | None:
        """The source, or None when the event cannot have one (followers of no actor).
        ``at``: the time subscriptions must not have expired by (fan-out's now)."""
        if kind == OBJECT_SUBSCRIBERS:
            return cls(kind, type, actor, obj, at)
        if kind == ACTOR_FOLLOWERS and actor is not None:
            return cls(kind, type, actor, obj)
        return None


def sources_of(audience: tuple[str, ...]) -> list[str]:
    """A type's audience sources in the order fan-out resolves them."""
    return [s for s in SOURCES if s in audience]


# the bits of each reason in an inbox row's flags (tidings.domain.flags)
RECIPIENT = reason_code("recipient")
MENTION = reason_code("mention")
SUBSCRIBED = reason_code("subscribed")
FOLLOWING = reason_code("following")


def mentioned(payload: Mapping[str, Any], key: str | None) -> frozenset[str]:
    """The users an event's payload lists under its type's ``mentions`` key: a list of user
    ids (anything else there names nobody)."""
    if key is None:
        return frozenset()
    listed = payload.get(key)
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(u for u in listed if isinstance(u, str))


def reasons(users: Iterable[str], *, named: Collection[str], mentioned: Collection[str],
            subscribed: Collection[str], following: bool) -> dict[str, int]:
    """Why each of ``users`` (an event's audience, or a chunk of it) hears of the event, as
    the bits of the most personal reason that applies: a recipient the event names
    (``named``) is ``mention`` when its payload lists them as mentioned, else ``recipient``;
    else a subscriber of its object is ``subscribed``; else, when the type reaches its
    actor's followers, ``following`` (a user of the audience no other source names is one);
    else no reason is kept (0)."""
    last = FOLLOWING if following else 0
    return {user: (MENTION if user in mentioned else RECIPIENT) if user in named
            else SUBSCRIBED if user in subscribed else last for user in users}


def more_personal(flags: int, other: int) -> int:
    """``flags`` with its reason the more personal of its own and ``other``'s (a group's
    base row on a join: the group shows the most personal reason among its members); a
    reason not known (0) gives way to any."""
    mine, theirs = flags & REASON_MASK, other & REASON_MASK
    if theirs and (not mine or theirs < mine):
        return (flags & ~REASON_MASK) | theirs
    return flags
