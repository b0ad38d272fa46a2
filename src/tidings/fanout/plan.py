"""Fan-out jobs (LiveJournal ESN): an event's audience, resolved in chunks, into inboxes.

``fanout`` (ESN's FiredEvent) looks at each audience source. If the whole audience (every
source together) fits in one chunk it is delivered in the same job (the fast path). Otherwise
the job is replaced atomically by one ``fanout_chunk`` job per chunk of each source, and the
explicit recipients in chunks of their own (``replace_with``), which any worker may run.
Sources overlap freely: a user named twice is written once, because (user, event) is unique.

When some users' inboxes live on a server that is away (one Redis Cluster node stopped), a
chunk delivers the others and is replaced by a job for only those users, retried with backoff
(ESN: "if any cluster is down, we always split the job"); every delivery is idempotent, so a
unit that met the stopped node, rolled back and ran again writes nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from tidings.channels.registry import Channel
from tidings.domain.audience import (
    ACTOR_FOLLOWERS,
    RECIPIENTS,
    AudienceSource,
    sources_of,
)
from tidings.domain.views import StoredEvent
from tidings.fanout import batch
from tidings.fanout.batch import deliver
from tidings.fanout.deliver import type_of
from tidings.fanout.specs import away_spec, chunk_spec, users_spec
from tidings.jobs.context import Deferred, JobContext, Replacements
from tidings.jobs.model import SECOND, Job, backoff_us
from tidings.ports import Tx

MAX_AWAY_BACKOFF_US = 60 * SECOND  # the longest wait before users on a node away are tried


def _sources(ctx: JobContext, event: StoredEvent) -> list[str]:
    return sources_of(type_of(ctx, event).audience)


class FanOut:
    """The two fan-out job handlers, over the outbound channels they schedule."""

    def __init__(self, channels: Sequence[Channel]) -> None:
        self.channels = list(channels)

    def run_fanout(self, ctx: JobContext, tx: Tx, job: Job) -> Replacements:
        """Deliver at once, or return the chunk jobs that replace this one.

        The fast path needs the whole audience (every source together) to fit one chunk.
        Otherwise every source becomes chunk jobs of its own, small ones included, so no job
        delivers more than ``chunk_size`` users and the followers' chunks push timelines.
        """
        event = tx.events.get(int(job.args["event_id"]), lock=True)
        if event is None or event.retracted_at is not None:
            return None
        chunk = ctx.config.chunk_size
        recipients = sorted(set(event.recipients)) if RECIPIENTS in _sources(ctx, event) else []
        audience: set[str] = set(recipients)
        followers: list[str] = []
        small: list[str] = []  # sources that fit one chunk on their own
        large: list[tuple[str, AudienceSource]] = []
        for kind in _sources(ctx, event):
            source = None if kind == RECIPIENTS else AudienceSource.of(
                kind, event.type, event.actor, event.object, event.created_at)
            if source is None:
                continue
            first = tx.graph.audience(source, after="", upto=None, limit=chunk + 1)
            if len(first) > chunk:
                large.append((kind, source))
                continue
            if first:
                small.append(kind)
            audience.update(first)
            if kind == ACTOR_FOLLOWERS:
                followers = first
        if not large and len(audience) <= chunk:
            return self._deliver(ctx, tx, job, event, sorted(audience), followers)
        specs = [chunk_spec(job.args, event.id, kind, "", None, job.priority) for kind in small]
        for kind, source in large:
            after = ""
            while True:
                upto = tx.graph.nth_after(source, after, chunk)
                if upto is not None and tx.graph.nth_after(source, upto, 1) is None:
                    upto = None  # the rest fills this chunk exactly: no empty chunk after it
                specs.append(chunk_spec(job.args, event.id, kind, after, upto, job.priority))
                if upto is None:
                    break
                after = upto
        specs += [users_spec(job.args, event.id, recipients[i:i + chunk], job.priority, part=n)
                  for n, i in enumerate(range(0, len(recipients), chunk))]
        return specs

    def run_fanouts(self, ctx: JobContext, tx: Tx, jobs: Sequence[Job]
                    ) -> list[Replacements | Deferred]:
        """Several fan-out jobs in one unit, as :meth:`run_fanout` one by one in event-id
        order would (:mod:`tidings.fanout.batch`); the jobs past the unit's budget are
        deferred."""
        return batch.run_many(ctx, tx, jobs, self.channels, _sources, self.run_fanout)

    def run_chunk(self, ctx: JobContext, tx: Tx, job: Job) -> Replacements:
        event = tx.events.get(int(job.args["event_id"]), lock=True)
        if event is None or event.retracted_at is not None:
            self.unhold(tx, job)
            return None
        kind = job.args["source"]
        if kind == "users":
            users = list(job.args["users"])
            timeline = list(job.args.get("timeline", ()))
        else:
            source = AudienceSource.of(kind, event.type, event.actor, event.object,
                                       event.created_at)
            users = [] if source is None else tx.graph.audience(
                source, after=job.args["after"], upto=job.args["upto"])
            timeline = users if kind == ACTOR_FOLLOWERS else []
        return self._deliver(ctx, tx, job, event, users, timeline)

    def _deliver(self, ctx: JobContext, tx: Tx, job: Job, event: StoredEvent,
                 users: list[str], timeline: list[str]) -> Replacements:
        """Deliver to ``users`` (``timeline``: the followers among them); the users whose
        inboxes are on a server away now go to a job of their own, retried with backoff,
        unless all are (then this job tries them: its failure gives it back). When the
        event's index of holders is on a server away, the users here are delivered to all
        the same and carried by that job as ``holders``, indexed once the server answers."""
        held = sorted(job.args.get("holders", ()))
        away = tx.inbox.unreachable(users)
        later_index = bool(users) and tx.inbox.index_unreachable(event.id)
        if not (away or later_index) or away.issuperset(users):
            tx.inbox.index(event.id, held)  # fails with the server if still away: retried
            deliver(ctx, tx, event, users, self.channels, at=job.args.get("at"),
                    timeline=timeline, writer=f"job:{job.id}")
            return None
        if later_index:
            tx.inbox.index_later(event.id)
        else:
            tx.inbox.index(event.id, held)
        here = [u for u in users if u not in away]
        notified = deliver(ctx, tx, event, here, self.channels, at=job.args.get("at"),
                           timeline=[u for u in timeline if u not in away],
                           writer=f"job:{job.id}")
        retry = int(job.args.get("retry", 0)) + 1
        delay = backoff_us(retry, int(ctx.config.job_backoff_seconds * SECOND),
                           MAX_AWAY_BACKOFF_US)
        holders = sorted(set(held).union(notified)) if later_index else []
        return [away_spec(job.args, event.id, sorted(away), sorted(away.intersection(timeline)),
                          job.priority, retry, ctx.clock.now_us() + delay, holders)]

    @staticmethod
    def unhold(tx: Tx, job: Job) -> None:
        """The event of a job carrying ``holders`` was retracted or removed before their
        index was complete: a retraction or retention sweep read the index without them,
        so their rows of it go here (the index's server away still: the job is retried)."""
        event_id = int(job.args["event_id"])
        keys = [k for user in job.args.get("holders", ()) for k in tx.inbox.keys_of(user,
                                                                                [event_id])]
        if keys:
            tx.inbox.remove(keys)
