"""Background upkeep: the per-user caps and age retention, never done on a read."""

from __future__ import annotations

from tidings.fanout.specs import retention_spec, trim_spec
from tidings.jobs.context import JobContext, Replacements
from tidings.jobs.model import Job
from tidings.ports import Tx

DAY_US = 86_400 * 1_000_000
RETENTION_BATCH = 500


def run_trim(ctx: JobContext, tx: Tx, job: Job) -> Replacements:
    """Keep one user's timeline and inbox under their caps (fan-out keeps both caps itself,
    in the delivering unit; this job is for a cap lowered since)."""
    user = job.args["user"]
    removed = 0
    if tx.inbox.over_cap([user], ctx.config.inbox_cap):
        removed += tx.inbox.trim(user, ctx.config.inbox_cap)
    removed += tx.timeline.trim(user, ctx.config.timeline_cap)
    return [trim_spec(user)] if removed else None


def run_retention(ctx: JobContext, tx: Tx, job: Job) -> Replacements:
    """Remove notifications of events older than their type's (or the default) retention,
    and any decider state a store keeps that was made over a day ago
    (``InboxStore.forget_bundle_locks``; none of the stores keeps any now: SQL's
    ``inbox_open`` rows stay while their bundle has a base); once swept, keep the hot store's
    journal bounded (``InboxStore.compact_history``)."""
    now = ctx.clock.now_us()
    default_days = ctx.config.retention_days
    by_days: dict[int, list[str]] = {}
    for event_type in ctx.catalog.types:
        days = event_type.retention_days or default_days
        by_days.setdefault(days, []).append(event_type.name)
    declared = [t.name for t in ctx.catalog.types]
    expired: list[int] = []
    for days, names in sorted(by_days.items()):
        expired += tx.events.expired_ids(types=names, other_than=None,
                                         before=now - days * DAY_US, limit=RETENTION_BATCH)
    expired += tx.events.expired_ids(types=None, other_than=declared,
                                     before=now - default_days * DAY_US, limit=RETENTION_BATCH)
    # decider state is only needed while units contend: a day is plenty
    forgotten = tx.inbox.forget_bundle_locks(now - DAY_US, RETENTION_BATCH)
    if expired:
        tx.inbox.remove(tx.inbox.keys_for_events(expired))
        tx.events.delete(expired)
    more = len(expired) >= RETENTION_BATCH or forgotten >= RETENTION_BATCH
    if not more:  # swept: a store's history of its writes is folded now and then
        tx.inbox.compact_history(now)
    return [retention_spec()] if more else None
