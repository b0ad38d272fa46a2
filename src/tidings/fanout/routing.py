"""Which channels each user of an audience may be reached on, by how they came to hear of it.

A recipient named by the event, or a follower of its actor (when the type reaches followers),
may get every channel. A user who is in the audience through subscriptions only gets the
union of the channels those subscriptions ask for (``subscribe(…, channels=["email"])``: mail,
no inbox item). The user's preferences apply on top (:func:`tidings.domain.preferences.within`:
the stricter wins). Decided per user from the store, not from the chunk a user came in, so
every chunk of one event routes a user alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from tidings.domain.audience import ACTOR_FOLLOWERS, OBJECT_SUBSCRIBERS, RECIPIENTS
from tidings.domain.types import CHANNELS, EventType
from tidings.domain.views import StoredEvent
from tidings.ports import Tx

EVERY_CHANNEL = frozenset(CHANNELS)


def subscription_limits(tx: Tx, event: StoredEvent, event_type: EventType,
                        users: Sequence[str]) -> dict[str, frozenset[str]]:
    """The users reached through subscriptions only whose channels are limited, with their
    channels; users left out may get every channel."""
    if OBJECT_SUBSCRIBERS not in event_type.audience:
        return {}
    named = set(event.recipients) if RECIPIENTS in event_type.audience else set()
    others = [u for u in users if u not in named]
    limits = {user: channels for user, channels
              in tx.graph.subscription_channels(others, event.type, event.object,
                                                event.created_at).items()
              if not channels >= EVERY_CHANNEL}
    if limits and ACTOR_FOLLOWERS in event_type.audience and event.actor is not None:
        for user in tx.graph.following(sorted(limits), event.actor):
            del limits[user]
    return limits
