"""Audience rules (LiveJournal ESN): which sources name the users an event reaches."""

from __future__ import annotations

from dataclasses import dataclass

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
