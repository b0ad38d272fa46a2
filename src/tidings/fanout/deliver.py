"""Deliver one chunk of an audience: filter, write inbox rows (bundled), timelines, channels."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tidings.channels.registry import Channel, Outgoing
from tidings.domain.bundling import bundle_hash
from tidings.domain.preferences import plan, within
from tidings.domain.timeline import PUSH, SourceState, decide, flip
from tidings.domain.types import EventType
from tidings.domain.views import Delivery, StoredEvent
from tidings.exceptions import JobError
from tidings.fanout.privacy import permitted
from tidings.fanout.routing import subscription_limits
from tidings.jobs.context import JobContext
from tidings.ports import Tx


def type_of(ctx: JobContext, event: StoredEvent) -> EventType:
    """The event's type, read again from the store if this process has not seen it.

    A type no process has stored in a form this one can read is a :class:`JobError`: the job
    is retried, then recorded as failed (logged and counted by the worker), and nobody gets a
    delivery by guessed rules — never "recipients only" in silence.
    """
    if ctx.catalog.known(event.type):
        return ctx.catalog.types.get(event.type)
    known = ", ".join(t.name for t in ctx.catalog.types) or "none"
    raise JobError(
        f"event {event.id} is of type {event.type!r}, which this process does not know "
        f"(known: {known}); declare it where every process reads it (Tidings.open(types=...), "
        "TIDINGS_TYPES_FILE, define_type or PUT /v1/types), or run a worker of the version "
        "that stored it")


def _delivery(event: StoredEvent, *, category: str, section: str, bundle: str, now: int,
              backfill: bool = False, writer: str = "",
              fields: tuple[tuple[str, str], ...] = ()) -> Delivery:
    """The delivery of ``event`` at ``now``: dated at the event's own time (a back-fill is
    delivered at it), fresh from ``now``."""
    return Delivery(
        event_id=event.id, created_at=event.created_at, delivered_at=now,
        type=event.type, category=category, section=section,
        actor=event.actor, object=event.object,
        bundle_hash=bundle_hash(bundle, event.type, event.actor, event.object, event.id),
        bundled=bundle != "none", writer=writer, backfill=backfill, fields=fields)


def write_inbox(tx: Tx, event: StoredEvent, *, category: str, section: str, bundle: str,
                users: Iterable[str], now: int, backfill: bool = False,
                writer: str = "", fields: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """Write one notification per user for ``event``; return the users newly notified.

    Idempotent: users who already have this event are skipped. A bundled notification joins
    the newest display group of its bundle hash while that group is unread, else starts one
    (:func:`tidings.domain.bundling.join_or_start`, applied by ``InboxStore.deliver``); a
    back-filled one (dated ``now`` in the past) only looks at groups older than itself.
    """
    delivery = _delivery(event, category=category, section=section, bundle=bundle, now=now,
                         backfill=backfill, writer=writer, fields=fields)
    return tx.inbox.deliver(delivery, sorted(set(users)))


def deliver(ctx: JobContext, tx: Tx, event: StoredEvent, users: Iterable[str],
            channels: Sequence[Channel], *, at: int | None = None,
            timeline: Sequence[str] = (), writer: str = "") -> list[str]:
    """Filter an audience chunk and deliver it; returns the users notified in the inbox.

    ``timeline`` names the actor's followers in this chunk: when the actor's posts are pushed
    (``_pushed``), the event goes into their timelines too (same filters: exclusions, mutes
    and the type's privacy rule), each mailbox kept to the newest ``timeline_cap``.
    ``writer`` names the job delivering (see :class:`tidings.domain.views.Delivery`).
    """
    excluded = set(event.exclude)
    if event.actor is not None:
        excluded.add(event.actor)
    candidates = sorted(u for u in set(users) if u not in excluded)
    if not candidates:
        return []
    muted = tx.graph.muting(candidates, event.actor, event.object)
    candidates = [u for u in candidates if u not in muted]
    event_type = type_of(ctx, event)
    # before anything is written: the type's privacy rule
    candidates = permitted(ctx, tx, event, event_type, candidates)
    now = at if at is not None else ctx.clock.now_us()
    delivered = by_channel(ctx, tx, event, event_type, candidates, channels, now,
                           backfill=at is not None, writer=writer)
    cap_inboxes(ctx, tx, delivered)
    reached: list[str] = []  # the followers whose timelines this post joins
    if timeline:
        allowed = set(candidates)
        reached = [u for u in timeline if u in allowed]
        if pushed(ctx, tx, event):
            # newest kept, on every push
            tx.timeline.push_capped([(event.id, reached, event.created_at)],
                                    ctx.config.timeline_cap)
    # Live streams hear of new inbox rows, and the followers of the post on their timelines:
    # pushed into their mailboxes or merged in at read time (pull), they are told either way.
    touched = sorted(set(delivered).union(reached)) if reached else delivered
    if touched:
        notifier = ctx.store.notifier
        tx.after_commit(lambda: notifier.changed(touched))
    count_delivered(ctx, tx, event, len(delivered), backfill=at is not None)
    return delivered


def count_delivered(ctx: JobContext, tx: Tx, event: StoredEvent, count: int, *,
                    backfill: bool) -> None:
    """Once the unit commits (a unit retried counts once): the inbox rows written and, unless
    back-filled, how long after its publication the event became visible in them."""
    if not count:
        return
    observer, clock = ctx.observer, ctx.clock

    def committed() -> None:
        observer.delivered(count)
        if not backfill:
            observer.observe("visible_seconds", max(clock.now_us() - event.created_at, 0) / 1e6)

    tx.after_commit(committed)


def cap_inboxes(ctx: JobContext, tx: Tx, delivered: Sequence[str]) -> None:
    """The cap holds after every delivery: only users whose size bound passes it are trimmed
    (newest by time kept), in this unit, so no path leaves an inbox over it."""
    for user in tx.inbox.over_cap(delivered, ctx.config.inbox_cap):
        tx.inbox.trim(user, ctx.config.inbox_cap)


def pushed(ctx: JobContext, tx: Tx, event: StoredEvent,
           sources: dict[str, SourceState] | None = None) -> bool:
    """Whether the actor's posts go into mailboxes now (push) or are read from the events
    (pull), by the timeline model (``docs/timelines.md``); a change is recorded on the source.
    ``sources``: the sources' states as already read in this unit (kept up to date here)."""
    if event.actor is None:
        return False
    if sources is None:
        sources = tx.graph.timeline_sources([event.actor])
    state = sources.get(event.actor, SourceState())
    model = decide(ctx.config.timeline_model, state.model, state.followers,
                   ctx.config.celebrity_followers)
    changed, push_from = flip(state, model, (event.created_at, event.id))
    if changed:
        tx.graph.set_push_from(event.actor, push_from)
        sources[event.actor] = replace(state, push_from=push_from)
    return model == PUSH


def addresses_of(prefs: dict[str, dict[str, Any]]) -> list[str]:
    """The mail addresses named in users' preferences (to look up their bounces)."""
    return [str(p["email"]["address"]) for p in prefs.values()
            if isinstance(p.get("email"), dict) and p["email"].get("address")]


@dataclass(frozen=True)
class Planned:
    """One event's delivery to a chunk, decided but not written: its inbox row (``delivery``),
    who gets it (``web``), and for the other channels (``outgoing`` None: none), every user of
    the chunk with their plan."""

    delivery: Delivery
    web: list[str]
    outgoing: Outgoing | None = None
    others: frozenset[str] = frozenset()  # the chunk's users with the web channel off


def plan_channels(ctx: JobContext, tx: Tx, event: StoredEvent, event_type: EventType,
                  candidates: list[str], now: int, *, backfill: bool, writer: str,
                  known: tuple[dict[str, dict[str, Any]], set[str]] | None = None) -> Planned:
    """Inbox rows for users with the web channel on; other channels as preferences say,
    within the channels of the subscriptions that brought the user (``fanout/routing.py``).
    ``known``: the candidates' preferences and bounced addresses, read already (a batch)."""
    if known is None:
        prefs = tx.settings.preferences_many(candidates)
        bounced = tx.settings.bounced(addresses_of(prefs))
    else:
        every, bounced = known
        prefs = {u: every[u] for u in candidates if u in every}
    limits = subscription_limits(tx, event, event_type, candidates)
    # a user with no preferences and no subscription limit gets the type's default plan
    default = within(plan(None, event_type, "" in bounced), None)
    plans = {
        user: within(plan(prefs.get(user), event_type,
                          str((prefs.get(user, {}).get("email") or {}).get("address", ""))
                          .lower() in bounced, event.object), limits.get(user))
        if user in prefs or user in limits else default
        for user in candidates
    }
    delivery = _delivery(event, category=event_type.category, section=event_type.section,
                         bundle=event_type.bundle, now=now, backfill=backfill, writer=writer,
                         fields=event_type.query_fields(event.payload))
    web = sorted({u for u in candidates if plans[u].web})
    if backfill:
        return Planned(delivery, web)  # an imported event is history: no mail, no webhooks
    outgoing = Outgoing(event=event, event_type=event_type, bundle_hash=delivery.bundle_hash,
                        plans=plans, prefs=prefs, now=now)
    return Planned(delivery, web, outgoing, frozenset(u for u in candidates if not plans[u].web))


def schedule(ctx: JobContext, tx: Tx, planned: Planned, delivered: Sequence[str],
             channels: Sequence[Channel]) -> None:
    """The other channels of a planned delivery, for the users it reached: those whose inbox
    row was written now, and those with the web channel off."""
    if planned.outgoing is None:
        return
    reached = planned.others.union(delivered)
    plans = planned.outgoing.plans
    outgoing = replace(planned.outgoing, plans={u: plans[u] for u in sorted(reached)})
    for channel in channels:
        channel.schedule(ctx, tx, outgoing)


def by_channel(ctx: JobContext, tx: Tx, event: StoredEvent, event_type: EventType,
               candidates: list[str], channels: Sequence[Channel], now: int, *,
               backfill: bool, writer: str,
               known: tuple[dict[str, dict[str, Any]], set[str]] | None = None) -> list[str]:
    """:func:`plan_channels`, the inbox rows, then :func:`schedule`; the users newly written."""
    planned = plan_channels(ctx, tx, event, event_type, candidates, now, backfill=backfill,
                            writer=writer, known=known)
    delivered = tx.inbox.deliver(planned.delivery, planned.web)
    schedule(ctx, tx, planned, delivered, channels)
    return delivered
