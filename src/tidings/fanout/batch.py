"""The fan-out pipeline: events delivered to their audiences' chunks in one unit of work,
set-based where the ports allow. One job's chunk is a batch of one (:func:`deliver`);
several fan-out jobs of a claim (``Handler.run_many``, :func:`run_many`) are one batch, with
the same outcome as running them one by one in the order they were claimed (by priority,
then by when they were queued: event-id order for events of one priority).

Per batch, not per event: the events (one read, locked as :meth:`EventStore.get` locks), the
first ``chunk_size + 1`` followers of every actor (:meth:`GraphStore.followers_of`), the mutes,
preferences and bounces of everyone reached, the timeline sources of every actor, the
timeline entries with the timeline cap over every mailbox they grow (one
:meth:`TimelineStore.push_capped`: one statement on PostgreSQL), the inbox rows
(:meth:`InboxStore.deliver_many`: bundling decided in claim order against the bases read at
once and the groups the batch's earlier events wrote) with the inbox cap after them (see
:meth:`Batch._runs`), and one live notification after the commit.

Per event, as before, inside the unit: the subscribers of its object (the first
``chunk_size + 1``, as the one-event handler reads them), the exclusions, the type's privacy
rule, the channels' scheduling and the hybrid/pull decision with its source-state flip (kept
in order on the batch's copy of the states). An event whose audience needs more than one
chunk runs the existing one-event handler in its place in the order (the batch gathered so far
is written first).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tidings import tracing
from tidings.channels.registry import Channel
from tidings.domain.audience import (
    ACTOR_FOLLOWERS,
    OBJECT_SUBSCRIBERS,
    RECIPIENTS,
    AudienceSource,
)
from tidings.domain.inboxcap import checks
from tidings.domain.views import StoredEvent
from tidings.fanout.deliver import (
    Planned,
    addresses_of,
    cap_inboxes,
    count_delivered,
    plan_channels,
    pushed,
    schedule,
    type_of,
)
from tidings.fanout.privacy import permitted
from tidings.jobs.context import DEFERRED, Deferred, JobContext, Replacements
from tidings.jobs.model import Job
from tidings.ports import Tx

BATCHED_SOURCES = frozenset({RECIPIENTS, ACTOR_FOLLOWERS, OBJECT_SUBSCRIBERS})
# A unit of batched fan-out delivers about this many chunks' worth of users at most (the
# jobs past it wait for another unit), whatever the claim's size.
BUDGET_CHUNKS = 2
# A job run on its own (a chunked audience) counts as this share of a chunk, its audience
# unknown until it runs: ten of them make a unit, as before the budget.
ONE_JOB_SHARE = 5


@dataclass(frozen=True)
class Item:
    """One event of a batch: its audience (one chunk at most) and the followers among it."""

    event: StoredEvent
    users: list[str]
    timeline: list[str]
    at: int | None
    writer: str
    job_args: Mapping[str, Any] | None = None  # its job's (for its trace context)


def _muted(mutes: set[tuple[str, str]] | None, event: StoredEvent) -> bool:
    if not mutes:
        return False
    return ((event.actor is not None and ("actor", event.actor) in mutes)
            or (event.object is not None and ("object", event.object) in mutes))


class Batch:
    """Events gathered in order, written by :meth:`flush` with per-batch statements."""

    def __init__(self, ctx: JobContext, tx: Tx, channels: Sequence[Channel]) -> None:
        self.ctx = ctx
        self.tx = tx
        self.channels = channels
        self.items: list[Item] = []
        self.seen: set[int] = set()
        self.touched: set[str] = set()

    def add(self, item: Item) -> None:
        if item.event.id not in self.seen:  # an event twice in a batch is delivered once
            self.seen.add(item.event.id)
            self.items.append(item)

    def flush(self) -> list[list[str]]:
        """Write the events gathered, in order; the users each one's inbox rows went to."""
        items, self.items = self.items, []
        if not items:
            return []
        ctx, tx = self.ctx, self.tx
        firsts: list[tuple[Item, list[str]]] = []  # each event with its users not excluded
        everyone: set[str] = set()
        for item in items:
            excluded = set(item.event.exclude)
            if item.event.actor is not None:
                excluded.add(item.event.actor)
            candidates = sorted(u for u in set(item.users) if u not in excluded)
            if candidates:  # else nothing is written nor decided for it
                firsts.append((item, candidates))
                everyone.update(candidates)
        if not firsts:
            return [[] for _ in items]
        if len(firsts) == 1:  # one event: only the mutes of its actor and object are read
            (item, candidates), = firsts
            muted = tx.graph.muting(candidates, item.event.actor, item.event.object)
            firsts = [(item, [u for u in candidates if u not in muted])]
        else:
            mutes = tx.graph.mutes_many(sorted(everyone)) if everyone else {}
            firsts = [(item, [u for u in candidates if not _muted(mutes.get(u), item.event)])
                      for item, candidates in firsts]
        chosen: list[tuple[Item, list[str]]] = []
        reached_all: set[str] = set()
        for item, candidates in firsts:
            # before anything is written
            candidates = permitted(ctx, tx, item.event, type_of(ctx, item.event), candidates)
            chosen.append((item, candidates))
            reached_all.update(candidates)
        if len(chosen) > 1:  # several events written per user: kept apart from other such units
            tx.inbox.hold(sorted(reached_all))
        prefs = tx.settings.preferences_many(sorted(reached_all)) if reached_all else {}
        known = (prefs, tx.settings.bounced(addresses_of(prefs)))
        actors = sorted({i.event.actor for i, _ in chosen if i.timeline and i.event.actor})
        sources = tx.graph.timeline_sources(actors) if actors else {}
        planned: list[Planned] = []
        for item, candidates in chosen:
            event = item.event
            now = item.at if item.at is not None else ctx.clock.now_us()
            planned.append(plan_channels(
                ctx, tx, event, type_of(ctx, event), candidates, now,
                backfill=item.at is not None, writer=item.writer, known=known))
        pushes: list[tuple[int, Sequence[str], int]] = []
        written: dict[int, list[str]] = {}
        for (item, candidates), plan, delivered in zip(chosen, planned, self._write(planned),
                                                        strict=True):
            written[item.event.id] = delivered
            event = item.event
            with tracing.resumed(item.job_args):  # its channels' jobs join its trace
                schedule(ctx, tx, plan, delivered, self.channels)
            self.touched.update(delivered)
            if item.timeline:
                allowed = set(candidates)
                reached = [u for u in item.timeline if u in allowed]
                if pushed(ctx, tx, event, sources):
                    pushes.append((event.id, reached, plan.delivery.created_at))
                self.touched.update(reached)
            count_delivered(ctx, tx, event, len(delivered), backfill=item.at is not None)
        if pushes:  # the cap held over every mailbox written: the newest kept
            tx.timeline.push_capped(pushes, ctx.config.timeline_cap)
        return [written.get(item.event.id, []) for item in items]

    def _write(self, planned: Sequence[Planned]) -> list[list[str]]:
        """The inbox rows of the planned deliveries, in order, each followed by the inbox cap
        as one by one, written a run at a time (``InboxStore.deliver_many``) and capped after
        each run (:meth:`_runs`)."""
        written: list[list[str]] = []
        for start, end in self._runs(planned):
            run = self.tx.inbox.deliver_many([(p.delivery, p.web) for p in planned[start:end]])
            cap_inboxes(self.ctx, self.tx, [(p.delivery.event_id, users) for p, users in zip(
                planned[start:end], run, strict=True)])
            written += run
        return written

    def _runs(self, planned: Sequence[Planned]) -> list[tuple[int, int]]:
        """Where capping once after a run keeps what capping after each event would: a run
        ends after every event whose delivery checks an inbox
        (:func:`tidings.domain.inboxcap.checks`) that could then hold more than the cap, the
        user getting more of the batch's events after it; else, one by one, the trim would
        come between two of that user's deliveries (and their bundling decisions). Which
        inboxes could is read once: those whose size now, plus the most rows any user gets
        in the batch, passes the cap (:meth:`InboxStore.over_cap`). Other checks find no
        more than the cap, in a run as one by one; a check at a user's last event of the batch
        trims after the run what it would have trimmed after that event, that user getting
        nothing more. A back-filled bundled event is a run of its own."""
        cap = self.ctx.config.inbox_cap
        last: dict[str, int] = {}
        for i, p in enumerate(planned):
            for user in p.web:
                last[user] = i
        early: dict[str, list[int]] = {}  # the events that check a user before their last
        for i, p in enumerate(planned):
            for user in p.web:
                if i < last[user] and checks(user, p.delivery.event_id, cap):
                    early.setdefault(user, []).append(i)
        ends = {i for i, p in enumerate(planned) if p.delivery.bundled and p.delivery.backfill}
        ends.update(i - 1 for i in set(ends))
        if early:
            most = max(Counter(u for p in planned for u in p.web).values())
            risky = (early if most > cap
                     else self.tx.inbox.over_cap(sorted(early), cap - most))
            ends.update(i for user in risky for i in early[user])
        runs: list[tuple[int, int]] = []
        start = 0
        for end in sorted(i + 1 for i in ends if 0 <= i < len(planned) - 1):
            runs.append((start, end))
            start = end
        runs.append((start, len(planned)))
        return runs

    def announce(self) -> None:
        """One live notification, after the commit, for every user the batch touched."""
        if self.touched:
            touched = sorted(self.touched)
            notifier = self.ctx.store.notifier
            self.tx.after_commit(lambda: notifier.changed(touched))


def deliver(ctx: JobContext, tx: Tx, event: StoredEvent, users: Iterable[str],
            channels: Sequence[Channel], *, at: int | None = None,
            timeline: Sequence[str] = (), writer: str = "") -> list[str]:
    """One event's chunk of users, filtered and delivered: a batch of one. Returns the users
    notified in the inbox.

    ``timeline`` names the actor's followers in this chunk: when the actor's posts are pushed
    (:func:`tidings.fanout.deliver.pushed`), the event goes into their timelines too (same
    filters: exclusions, mutes and the type's privacy rule), each mailbox kept to the newest
    ``timeline_cap``. ``at``: the time of a back-filled delivery (an imported event).
    ``writer`` names the job delivering (see :class:`tidings.domain.views.Delivery`).
    """
    batch = Batch(ctx, tx, channels)
    batch.add(Item(event, sorted(set(users)), list(timeline), at, writer))
    (delivered,) = batch.flush()
    batch.announce()
    return delivered


def run_many(ctx: JobContext, tx: Tx, jobs: Sequence[Job], channels: Sequence[Channel],
             sources_of: Callable[[JobContext, StoredEvent], list[str]],
             one: Callable[[JobContext, Tx, Job], Replacements]
             ) -> list[Replacements | Deferred]:
    """Fan several events out in one unit, in the order of ``jobs``; ``one`` runs a job whose event
    does not fit the batch (chunked audiences, object subscribers) on its own, in its place.
    Once the unit has reached :data:`BUDGET_CHUNKS` chunks' worth of users (a job run by
    ``one`` counted as a fifth of a chunk), the jobs after it are left for later units
    (``DEFERRED``): a claim of many small events is one unit, a few large ones are not."""
    results: list[Replacements | Deferred] = [None] * len(jobs)
    order = range(len(jobs))  # the claim's order, as one by one (by priority, then event id)
    events = tx.events.get_many([int(job.args["event_id"]) for job in jobs], lock=True)
    live = {i: events[int(jobs[i].args["event_id"])] for i in order
            if int(jobs[i].args["event_id"]) in events
            and events[int(jobs[i].args["event_id"])].retracted_at is None}
    kinds = {i: sources_of(ctx, event) for i, event in live.items()}
    simple = {i for i, k in kinds.items() if BATCHED_SOURCES.issuperset(k)}
    chunk = ctx.config.chunk_size
    followers = tx.graph.followers_of(
        sorted({e.actor for i, e in live.items()
                if i in simple and ACTOR_FOLLOWERS in kinds[i] and e.actor is not None}),
        limit=chunk + 1)
    batch = Batch(ctx, tx, channels)
    budget, taken = BUDGET_CHUNKS * chunk, 0
    for i in order:
        event = live.get(i)
        if event is None:
            continue  # gone or retracted: nothing to deliver
        item = _item(tx, event, kinds[i], followers, jobs[i], chunk) if i in simple else None
        if item is not None and (tx.inbox.unreachable(item.users)
                                 or tx.inbox.index_unreachable(event.id)):
            item = None  # some users' server is away: the one-event handler splits them off
        size = len(item.users) if item is not None else max(chunk // ONE_JOB_SHARE, 1)
        if taken and taken + size > budget:  # this one and the rest: later, in their order
            results[i:] = [DEFERRED] * (len(jobs) - i)
            break
        taken += size
        if item is None:
            batch.flush()
            with tracing.resumed(jobs[i].args):
                results[i] = one(ctx, tx, jobs[i])
        else:
            batch.add(item)
    batch.flush()
    batch.announce()
    return results


def _item(tx: Tx, event: StoredEvent, kinds: list[str], followers: dict[str, list[str]],
          job: Job, chunk: int) -> Item | None:
    """The event's batch item, or None if its audience does not fit one chunk (as the
    one-event handler's fast path decides). The subscribers of its object are read here, as
    that handler reads them (the first ``chunk + 1``)."""
    recipients = sorted(set(event.recipients)) if RECIPIENTS in kinds else []
    theirs: list[str] = []
    if ACTOR_FOLLOWERS in kinds and event.actor is not None:
        theirs = followers.get(event.actor, [])
        if len(theirs) > chunk:
            return None
    audience = set(recipients).union(theirs)
    source = AudienceSource.of(OBJECT_SUBSCRIBERS, event.type, event.actor, event.object,
                               event.created_at)
    if OBJECT_SUBSCRIBERS in kinds and source is not None:
        subscribers = tx.graph.audience(source, after="", upto=None, limit=chunk + 1)
        if len(subscribers) > chunk:
            return None
        audience.update(subscribers)
    if len(audience) > chunk:
        return None
    return Item(event, sorted(audience), theirs, job.args.get("at"), f"job:{job.id}",
                job.args)
