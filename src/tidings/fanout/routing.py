"""Which channels each user of an audience may be reached on, by how they came to hear of it.

A recipient named by the event, or a follower of its actor (when the type reaches followers),
may get every channel. A user who is in the audience through subscriptions only gets the
union of the channels those subscriptions ask for (``subscribe(…, channels=["email"])``: mail,
no inbox item). The user's preferences apply on top (:func:`tidings.domain.preferences.within`:
the stricter wins). Decided per user from the store, not from the chunk a user came in, so
every chunk of one event routes a user alike. The reason each user is notified for
(``recipient``, ``mention``, ``subscribed``, ``following``) is decided here too, from the same
reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from tidings.domain.audience import (
    ACTOR_FOLLOWERS,
    OBJECT_SUBSCRIBERS,
    RECIPIENTS,
    mentioned,
    reasons,
)
from tidings.domain.types import CHANNELS, EventType
from tidings.domain.views import StoredEvent
from tidings.ports import Tx

EVERY_CHANNEL = frozenset(CHANNELS)


def subscription_limits(tx: Tx, event: StoredEvent, event_type: EventType,
                        users: Sequence[str]) -> dict[str, frozenset[str]]:
    """The users reached through subscriptions only whose channels are limited, with their
    channels; users left out may get every channel."""
    return routes(tx, event, event_type, users)[0]


def routes(tx: Tx, event: StoredEvent, event_type: EventType, users: Sequence[str]
           ) -> tuple[dict[str, frozenset[str]], dict[str, int]]:
    """:func:`subscription_limits`, and why each of ``users`` hears of the event: the bits of
    its most personal reason (:func:`tidings.domain.audience.reasons`), from the same read of
    their subscriptions. Decided per user from the event and the store, so every chunk of one
    event gives a user the same reason, whichever source's chunk reached them."""
    audience = event_type.audience
    named = set(event.recipients) if RECIPIENTS in audience else set()
    others = [u for u in users if u not in named]
    subscribed: dict[str, frozenset[str]] = {}
    if OBJECT_SUBSCRIBERS in audience and others:
        subscribed = tx.graph.subscription_channels(others, event.type, event.object,
                                                    event.created_at)
    why = reasons(users, named=named,
                  mentioned=mentioned(event.payload, event_type.mentions) if named else (),
                  subscribed=subscribed,
                  following=ACTOR_FOLLOWERS in audience and event.actor is not None)
    if OBJECT_SUBSCRIBERS not in audience:
        return {}, why
    limits = {user: channels for user, channels in subscribed.items()
              if not channels >= EVERY_CHANNEL}
    if limits and ACTOR_FOLLOWERS in audience and event.actor is not None:
        for user in tx.graph.following(sorted(limits), event.actor):
            del limits[user]
    return limits, why
