"""MailStore in memory: bundling windows, mail waiting in batches, the sent and webhook logs,
webhook endpoint breakers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tidings.domain.views import MailBatchRow
from tidings.store.memory.state import Journal, SentRow, State, WebhookRow

DIGEST = "digest"


class MemoryMail:
    """The mail state of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def last_email_at(self, user: str, bundle_hash: str) -> int | None:
        return self._s.bundle_status.get((user, bundle_hash))

    def set_last_email_at(self, user: str, bundle_hash: str, at: int) -> None:
        self._j.put(self._s.bundle_status, (user, bundle_hash), at)

    def add_batch(self, rows: Sequence[MailBatchRow]) -> None:
        for row in rows:
            # unique per (user, event), as the SQL table's key: one waiting mail per notification
            key = (row.user_id, row.event_id)
            if key in self._s.batch_keys:
                continue
            row_id = self._j.next_id(self._s.seq, "batch")
            self._j.put(self._s.batch, row_id, replace(row, id=row_id))
            self._j.put(self._s.batch_keys, key, row_id)

    def batch(self, user: str, kind: str, *, bundle_hash: str | None = None,
              created_until: int | None = None, limit: int | None = None
              ) -> list[MailBatchRow]:
        rows = [r for r in self._s.batch.values()
                if r.user_id == user and r.kind == kind
                and (bundle_hash is None or r.bundle_hash == bundle_hash)
                and (created_until is None or r.created_at <= created_until)]
        if kind == DIGEST:
            rows.sort(key=lambda r: (r.priority, -r.event_id))
        else:
            rows.sort(key=lambda r: -r.event_id)
        return rows if limit is None else rows[:limit]

    def delete_batch(self, ids: Sequence[int]) -> None:
        for row_id in ids:
            row = self._j.drop(self._s.batch, row_id)
            if row is not None:
                self._j.drop(self._s.batch_keys, (row.user_id, row.event_id))

    def cancel_events(self, event_ids: Sequence[int], *, user: str | None = None) -> None:
        doomed = set(event_ids)
        self.delete_batch([r.id for r in self._s.batch.values() if r.event_id in doomed
                           and (user is None or r.user_id == user)])

    def sent_count(self, user: str, kind: str, since: int) -> int:
        return sum(1 for r in self._s.sent.values()
                   if r.user_id == user and r.kind == kind and r.sent_at > since)

    def log_sent(self, message_id: str, user: str, kind: str, address: str, subject: str,
                 at: int) -> None:
        row_id = self._j.next_id(self._s.seq, "sent")
        self._j.put(self._s.sent, row_id, SentRow(message_id, user, kind, address, subject, at))

    def was_sent(self, message_id: str) -> bool:
        return any(r.message_id == message_id for r in self._s.sent.values())

    def log_webhook(self, user: str, event_id: int, url: str, status: int | None,
                    attempt: int, error: str | None, at: int) -> None:
        row_id = self._j.next_id(self._s.seq, "webhooks")
        self._j.put(self._s.webhooks, row_id,
                    WebhookRow(user, event_id, url, status, attempt, error, at))

    def webhook_endpoint(self, host: str) -> tuple[int, int] | None:
        return self._s.webhook_endpoints.get(host)

    def save_webhook_endpoint(self, host: str, failures: int, paused_until: int) -> None:
        if failures <= 0:
            self._j.drop(self._s.webhook_endpoints, host)
        else:
            self._j.put(self._s.webhook_endpoints, host, (failures, paused_until))
