"""PushStore in memory."""

from __future__ import annotations

from collections.abc import Sequence

from tidings.domain.push import PushSubscription
from tidings.store.memory.state import Journal, State


class MemoryPush:
    """Push subscriptions of one unit of work (keyed by id; the hash is the endpoint's)."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def add_push_subscription(self, user: str, endpoint: str, endpoint_hash: str,
                              p256dh: str, auth: str, now: int) -> int:
        old = self._s.push_endpoints.get(endpoint_hash)
        if old is not None:
            self._j.drop(self._s.push_subscriptions, old)
        row_id = self._j.next_id(self._s.seq, "push_subscriptions")
        self._j.put(self._s.push_subscriptions, row_id,
                    PushSubscription(row_id, user, endpoint, p256dh, auth, now))
        self._j.put(self._s.push_endpoints, endpoint_hash, row_id)
        return row_id

    def push_subscriptions(self, user: str) -> list[PushSubscription]:
        return sorted((s for s in self._s.push_subscriptions.values() if s.user == user),
                      key=lambda s: s.id)

    def subscribed(self, users: Sequence[str]) -> set[str]:
        wanted = set(users)
        return {s.user for s in self._s.push_subscriptions.values() if s.user in wanted}

    def delete_push_subscription(self, user: str, subscription_id: int) -> bool:
        row = self._s.push_subscriptions.get(subscription_id)
        if row is None or row.user != user:
            return False
        self._j.drop(self._s.push_subscriptions, subscription_id)
        for key, value in list(self._s.push_endpoints.items()):
            if value == subscription_id:
                self._j.drop(self._s.push_endpoints, key)
        return True

    def delete_push_endpoints(self, endpoint_hashes: Sequence[str]) -> int:
        gone = 0
        for key in endpoint_hashes:
            row_id = self._j.drop(self._s.push_endpoints, key)
            if row_id is not None and self._j.drop(self._s.push_subscriptions,
                                                   row_id) is not None:
                gone += 1
        return gone
