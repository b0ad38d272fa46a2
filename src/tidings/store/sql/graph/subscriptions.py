"""A user's subscriptions (the subscription half of ``GraphStore`` on SQL): saved, counted,
listed and removed; who subscribes to an event is the audience's (:mod:`.graph`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, func, select

from tidings.domain.views import Subscription
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import subscriptions


def _subscription(row: Any) -> Subscription:
    return Subscription(id=row.id, user=row.user_id, type=row.type, object=row.object,
                        channels=tuple(c for c in row.channels.split(",") if c),
                        created_at=row.created_at, expires_at=row.expires_at)


class SqlSubscriptions:
    """The subscriptions table within one transaction (a base of ``SqlGraph``)."""

    db: Database
    conn: Connection

    def save_subscription(self, user: str, type: str, object: str, channels: Sequence[str],
                          now: int, expires_at: int | None = None) -> Subscription:
        self.conn.execute(self.db.upsert(
            subscriptions, ["user_id", "type", "object"],
            {"user_id": user, "type": type, "object": object,
             "channels": ",".join(sorted(set(channels))), "created_at": now,
             "expires_at": expires_at}, ["channels", "expires_at"]))
        row = self.conn.execute(select(subscriptions).where(
            subscriptions.c.user_id == user, subscriptions.c.type == type,
            subscriptions.c.object == object)).one()
        return _subscription(row)

    def subscription_count(self, user: str) -> int:
        return int(self.conn.execute(select(func.count()).select_from(subscriptions).where(
            subscriptions.c.user_id == user)).scalar_one())

    def delete_subscription(self, user: str, subscription_id: int) -> bool:
        result = self.conn.execute(delete(subscriptions).where(
            subscriptions.c.id == subscription_id, subscriptions.c.user_id == user))
        return result.rowcount > 0

    def subscriptions(self, user: str, *, after_id: int, limit: int) -> list[Subscription]:
        rows = self.conn.execute(
            select(subscriptions)
            .where(subscriptions.c.user_id == user, subscriptions.c.id > after_id)
            .order_by(subscriptions.c.id).limit(limit)).all()
        return [_subscription(r) for r in rows]
