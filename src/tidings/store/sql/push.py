"""PushStore on SQL: the ``push_subscriptions`` table within one transaction."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, insert, select

from tidings.domain.push import PushSubscription
from tidings.store.sql.schema.push import push_subscriptions as subs


class SqlPush:
    """Push subscriptions within one transaction."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def add_push_subscription(self, user: str, endpoint: str, endpoint_hash: str,
                              p256dh: str, auth: str, now: int) -> int:
        self.conn.execute(delete(subs).where(subs.c.endpoint_hash == endpoint_hash))
        result = self.conn.execute(insert(subs).values(
            user_id=user, endpoint=endpoint, endpoint_hash=endpoint_hash, p256dh=p256dh,
            auth=auth, created_at=now))
        key = result.inserted_primary_key
        assert key is not None
        return int(key[0])

    def push_subscriptions(self, user: str) -> list[PushSubscription]:
        rows = self.conn.execute(select(subs).where(subs.c.user_id == user)
                                 .order_by(subs.c.id)).all()
        return [PushSubscription(int(r.id), r.user_id, r.endpoint, r.p256dh, r.auth,
                                 int(r.created_at)) for r in rows]

    def subscribed(self, users: Sequence[str]) -> set[str]:
        if not users:
            return set()
        return set(self.conn.execute(select(subs.c.user_id).distinct().where(
            subs.c.user_id.in_(list(users)))).scalars())

    def delete_push_subscription(self, user: str, subscription_id: int) -> bool:
        result = self.conn.execute(delete(subs).where(subs.c.user_id == user,
                                                      subs.c.id == subscription_id))
        return bool(result.rowcount)

    def delete_push_endpoints(self, endpoint_hashes: Sequence[str]) -> int:
        if not endpoint_hashes:
            return 0
        result = self.conn.execute(delete(subs).where(
            subs.c.endpoint_hash.in_(list(endpoint_hashes))))
        return int(result.rowcount or 0)
