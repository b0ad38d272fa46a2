"""Background upkeep: the per-user caps and age retention, never done on a read."""

from __future__ import annotations

from tidings.domain.flags import SNOOZED
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
    """Remove notifications of events older than their type's (or the default) retention
    (a saved one stays, with its event), and any decider state a store keeps that was made
    over a day ago (``InboxStore.forget_bundle_locks``; none of the stores keeps any now: SQL's
    ``inbox_open`` rows stay while their bundle has a base); once swept, keep the hot store's
    journal bounded (``InboxStore.compact_history``)."""
    now = ctx.clock.now_us()
    default_days = ctx.config.retention_days
    by_days: dict[int, list[str]] = {}
    for event_type in ctx.catalog.types:
        days = event_type.retention_days or default_days
        by_days.setdefault(days, []).append(event_type.name)
    declared = [t.name for t in ctx.catalog.types]
    # a sweep in parts goes on above the event id it reached: the saved notifications it keeps
    # (with their events) are not found again and again, holding back the rest
    after = int(job.args.get("after", 0))
    expired: list[int] = []
    reached: list[int] = []  # the last id of each full part: more may lie beyond it
    queries: list[tuple[list[str] | None, list[str] | None, int]] = [
        (names, None, days) for days, names in sorted(by_days.items())]
    queries.append((None, declared, default_days))
    for types, other_than, days in queries:
        found = tx.events.expired_ids(types=types, other_than=other_than,
                                      before=now - days * DAY_US, limit=RETENTION_BATCH,
                                      after=after)
        expired += found
        if len(found) >= RETENTION_BATCH:
            reached.append(found[-1])
    # decider state is only needed while units contend: a day is plenty
    forgotten = tx.inbox.forget_bundle_locks(now - DAY_US, RETENTION_BATCH)
    if expired:  # saved notifications stay, and their events with them
        keys = tx.inbox.keys_for_events(expired)
        saved = set(tx.inbox.saved(keys))
        kept = {k.event_id for k in saved}
        tx.inbox.remove([k for k in keys if k not in saved] if saved else keys)
        tx.events.delete([e for e in expired if e not in kept])
    more = bool(reached) or forgotten >= RETENTION_BATCH
    if not more:  # swept: a store's history of its writes is folded now and then
        tx.inbox.compact_history(now)
    return [retention_spec(after=min(reached) if reached else after)] if more else None


def run_unsnooze(ctx: JobContext, tx: Tx, job: Job) -> Replacements:
    """A snoozed display group's time has come: back in the inbox, unread (and so unseen),
    with a live update on its user's streams. Nothing to do if it was unsnoozed, or snoozed
    again to another time, since."""
    user, group, until = job.args["user"], job.args["group"], job.args["until"]
    if tx.inbox.snoozes(user, [group]).get(group) != until:
        return None
    tx.inbox.set_flags(user, [group], off=SNOOZED)
    tx.inbox.mark_groups(user, [group], read=False, now=ctx.clock.now_us(),
                         markers=tx.inbox.load_markers(user))
    notifier = ctx.store.notifier
    tx.after_commit(lambda: notifier.changed([user]))
    return None
