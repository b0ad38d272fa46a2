"""Push-model timelines (``TimelineStore`` on SQL): followers' mailboxes of event ids."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection, delete, select

from tidings.domain.views import TimelineEntry
from tidings.store.sql.database import Database
from tidings.store.sql.schema import events, timelines


class SqlTimeline:
    """The ``timelines`` table within one transaction."""

    def __init__(self, db: Database, conn: Connection) -> None:
        self.db = db
        self.conn = conn

    def push(self, event_id: int, users: Sequence[str], now: int) -> None:
        if users:
            self.db.insert_many(self.conn, timelines, [
                {"user_id": user, "event_id": event_id, "created_at": now} for user in users
            ], ignore=True)

    def page(self, user: str, *, limit: int, before: int | None) -> list[TimelineEntry]:
        query = (
            select(events.c.id, events.c.type, events.c.actor, events.c.object,
                   events.c.payload, events.c.created_at)
            .join(timelines, timelines.c.event_id == events.c.id)
            .where(timelines.c.user_id == user, events.c.retracted_at.is_(None))
            .order_by(timelines.c.event_id.desc()).limit(limit)
        )
        if before is not None:
            query = query.where(timelines.c.event_id < before)
        return [TimelineEntry(id=r.id, type=r.type, actor=r.actor, object=r.object,
                              payload=json.loads(r.payload), created_at=r.created_at)
                for r in self.conn.execute(query)]

    def trim(self, user: str, cap: int) -> int:
        boundary = self.conn.execute(
            select(timelines.c.event_id).where(timelines.c.user_id == user)
            .order_by(timelines.c.event_id.desc()).limit(1).offset(cap)
        ).scalar()
        if boundary is None:
            return 0
        result = self.conn.execute(delete(timelines).where(
            timelines.c.user_id == user, timelines.c.event_id <= boundary))
        return max(result.rowcount, 0)
