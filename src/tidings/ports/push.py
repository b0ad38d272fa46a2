"""The port of Web Push subscriptions (``channels/push``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tidings.domain.push import PushSubscription


class PushStore(Protocol):
    """Browsers' push subscriptions, per user; an endpoint belongs to one user at a time."""

    def add_push_subscription(self, user: str, endpoint: str, endpoint_hash: str,
                              p256dh: str, auth: str, now: int) -> int:
        """Store the subscription (an endpoint stored already is replaced: new user and
        keys); returns its id."""

    def push_subscriptions(self, user: str) -> list[PushSubscription]:
        """The user's subscriptions, oldest first."""

    def subscribed(self, users: Sequence[str]) -> set[str]:
        """Those of ``users`` with at least one subscription."""

    def delete_push_subscription(self, user: str, subscription_id: int) -> bool:
        """Remove one of the user's subscriptions; False if there was none."""

    def delete_push_endpoints(self, endpoint_hashes: Sequence[str]) -> int:
        """Remove the subscriptions of these endpoints (the push service said they are gone)."""
