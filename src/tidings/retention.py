"""Age limits, enforced by a background job that removes old notifications in batches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Connection, select

from tidings.jobs.queue import Job, JobSpec
from tidings.store.sql import inbox
from tidings.store.sql.schema import events

if TYPE_CHECKING:
    from tidings.engine import Tidings

RETENTION = "retention"
DAY_US = 86_400 * 1_000_000
BATCH = 500


def retention_spec(run_after: int | None = None) -> JobSpec:
    return JobSpec(RETENTION, {}, unique_key="retention", priority=10, run_after=run_after)


def run_retention(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    """Remove notifications of events older than their type's (or the default) retention."""
    now = tidings.clock.now_us()
    default_days = tidings.config.retention_days
    by_days: dict[int, list[str]] = {}
    for event_type in tidings.types:
        days = event_type.retention_days or default_days
        by_days.setdefault(days, []).append(event_type.name)
    declared = [t.name for t in tidings.types]
    expired: list[int] = []
    for days, names in sorted(by_days.items()):
        expired += _expired(conn, events.c.type.in_(names), now - days * DAY_US)
    undeclared = events.c.type.not_in(declared) if declared else events.c.id > 0
    expired += _expired(conn, undeclared, now - default_days * DAY_US)
    if not expired:
        return None
    inbox.remove(conn, inbox.rows_for_events(conn, expired))
    conn.execute(events.delete().where(events.c.id.in_(expired)))
    return [retention_spec()] if len(expired) >= BATCH else None


def _expired(conn: Connection, condition: ColumnElement[bool], cutoff: int) -> list[int]:
    rows = conn.execute(
        select(events.c.id).where(condition, events.c.created_at < cutoff).limit(BATCH)
    )
    return [r.id for r in rows]
