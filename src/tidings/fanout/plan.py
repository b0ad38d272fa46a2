"""Fan-out jobs (LiveJournal ESN): an event's audience, resolved in chunks, into inboxes.

``fanout`` (ESN's FiredEvent) looks at each audience source. If the whole audience (every
source together) fits in one chunk it is delivered in the same job (the fast path). Otherwise
the job is replaced atomically by one ``fanout_chunk`` job per chunk of each source, and the
explicit recipients in chunks of their own (``replace_with``), which any worker may run.
Sources overlap freely: a user named twice is written once, because (user, event) is unique.
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
from tidings.fanout.deliver import deliver, type_of
from tidings.fanout.specs import chunk_spec, users_spec
from tidings.jobs.context import Deferred, JobContext, Replacements
from tidings.jobs.model import Job
from tidings.ports import Tx


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
            deliver(ctx, tx, event, audience, self.channels, at=job.args.get("at"),
                    timeline=followers, writer=f"job:{job.id}")
            return None
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
            return None
        kind = job.args["source"]
        if kind == "users":
            users = list(job.args["users"])
        else:
            source = AudienceSource.of(kind, event.type, event.actor, event.object,
                                       event.created_at)
            users = [] if source is None else tx.graph.audience(
                source, after=job.args["after"], upto=job.args["upto"])
        timeline = users if kind == ACTOR_FOLLOWERS else ()
        deliver(ctx, tx, event, users, self.channels, at=job.args.get("at"),
                timeline=timeline, writer=f"job:{job.id}")
        return None
