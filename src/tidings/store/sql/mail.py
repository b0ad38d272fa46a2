"""Outbound channel state (``MailStore`` on SQL): bundling windows, waiting mail, sent log,
webhook attempts and endpoint breakers."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, func, insert, select

from tidings.domain.views import MailBatchRow
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import (
    email_batch,
    email_bundle_status,
    email_log,
    webhook_deliveries,
    webhook_endpoints,
)

b = email_batch.c


class SqlMail:
    """The mail and webhook tables within one transaction."""

    def __init__(self, db: Database, conn: Connection) -> None:
        self.db = db
        self.conn = conn

    def last_email_at(self, user: str, bundle_hash: str) -> int | None:
        value = self.conn.execute(select(email_bundle_status.c.last_email_at).where(
            email_bundle_status.c.user_id == user,
            email_bundle_status.c.bundle_hash == bundle_hash)).scalar()
        return int(value) if value is not None else None

    def set_last_email_at(self, user: str, bundle_hash: str, at: int) -> None:
        self.conn.execute(self.db.upsert(
            email_bundle_status, ["user_id", "bundle_hash"],
            {"user_id": user, "bundle_hash": bundle_hash, "last_email_at": at},
            ["last_email_at"]))

    def add_batch(self, rows: Sequence[MailBatchRow]) -> None:
        if rows:
            self.db.insert_many(self.conn, email_batch, [
                {"user_id": r.user_id, "event_id": r.event_id, "kind": r.kind,
                 "bundle_hash": r.bundle_hash, "priority": r.priority,
                 "created_at": r.created_at} for r in rows
            ], ignore=True)

    def batch(self, user: str, kind: str, *, bundle_hash: str | None = None,
              created_until: int | None = None, limit: int | None = None
              ) -> list[MailBatchRow]:
        query = select(email_batch).where(b.user_id == user, b.kind == kind)
        if bundle_hash is not None:
            query = query.where(b.bundle_hash == bundle_hash)
        if created_until is not None:
            query = query.where(b.created_at <= created_until)
        if kind == "digest":
            query = query.order_by(b.priority, b.event_id.desc())
        else:
            query = query.order_by(b.event_id.desc())
        if limit is not None:
            query = query.limit(limit)
        return [MailBatchRow(user_id=r.user_id, event_id=r.event_id, kind=r.kind,
                             bundle_hash=r.bundle_hash, priority=r.priority,
                             created_at=r.created_at, id=r.id)
                for r in self.conn.execute(query)]

    def delete_batch(self, ids: Sequence[int]) -> None:
        if ids:
            self.conn.execute(delete(email_batch).where(b.id.in_(list(ids))))

    def cancel_events(self, event_ids: Sequence[int], *, user: str | None = None) -> None:
        if event_ids:
            query = delete(email_batch).where(b.event_id.in_(list(event_ids)))
            if user is not None:
                query = query.where(b.user_id == user)
            self.conn.execute(query)

    def sent_count(self, user: str, kind: str, since: int) -> int:
        return int(self.conn.execute(select(func.count()).select_from(email_log).where(
            email_log.c.user_id == user, email_log.c.kind == kind,
            email_log.c.sent_at > since)).scalar_one())

    def log_sent(self, message_id: str, user: str, kind: str, address: str, subject: str,
                 at: int) -> None:
        self.conn.execute(insert(email_log).values(
            message_id=message_id, user_id=user, kind=kind, address=address,
            subject=subject[:255], sent_at=at))

    def was_sent(self, message_id: str) -> bool:
        return self.conn.execute(select(email_log.c.id).where(
            email_log.c.message_id == message_id).limit(1)).first() is not None

    def log_webhook(self, user: str, event_id: int, url: str, status: int | None,
                    attempt: int, error: str | None, at: int) -> None:
        self.conn.execute(insert(webhook_deliveries).values(
            user_id=user, event_id=event_id, url=url[:1024], status=status, attempt=attempt,
            error=error, at=at))

    def webhook_endpoint(self, host: str) -> tuple[int, int] | None:
        row = self.conn.execute(select(webhook_endpoints.c.failures,
                                       webhook_endpoints.c.paused_until).where(
            webhook_endpoints.c.host == host)).first()
        return (int(row.failures), int(row.paused_until)) if row is not None else None

    def save_webhook_endpoint(self, host: str, failures: int, paused_until: int) -> None:
        if failures <= 0:
            self.conn.execute(delete(webhook_endpoints).where(webhook_endpoints.c.host == host))
            return
        self.conn.execute(self.db.upsert(
            webhook_endpoints, ["host"],
            {"host": host, "failures": failures, "paused_until": paused_until},
            ["failures", "paused_until"]))
