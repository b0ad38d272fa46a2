"""One event's delivery to a chunk of its audience, as the fan-out pipeline
(:mod:`tidings.fanout.batch`) plans and follows it up: its type, its channels per user,
the timeline model's push or pull, the inbox cap and what is counted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tidings.channels.registry import Channel, Outgoing
from tidings.domain.bundling import bundle_hash
from tidings.domain.inboxcap import checked
from tidings.domain.preferences import plan, within
from tidings.domain.timeline import PUSH, SourceState, decide, flip
from tidings.domain.types import EventType
from tidings.domain.views import Delivery, StoredEvent
from tidings.exceptions import JobError
from tidings.fanout.routing import routes
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
              fields: tuple[tuple[str, str], ...] = (),
              reasons: dict[str, int] | None = None) -> Delivery:
    """The delivery of ``event`` at ``now``: dated at the event's own time (a back-fill is
    delivered at it), fresh from ``now``."""
    return Delivery(
        event_id=event.id, created_at=event.created_at, delivered_at=now,
        type=event.type, category=category, section=section,
        actor=event.actor, object=event.object,
        bundle_hash=bundle_hash(bundle, event.type, event.actor, event.object, event.id),
        bundled=bundle != "none", writer=writer, backfill=backfill, fields=fields,
        reasons=reasons or {})


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


def cap_inboxes(ctx: JobContext, tx: Tx,
                written: Sequence[tuple[int, Sequence[str]]]) -> None:
    """The inbox cap, given the (event id, users newly written) of this unit's deliveries:
    the users one of them checks (:func:`tidings.domain.inboxcap.checks`, about one delivery
    in a margin per user) are trimmed to their newest ``inbox_cap`` by time, in this unit, if
    they hold more; the other inboxes are not read."""
    cap = ctx.config.inbox_cap
    for user in checked(written, cap):
        tx.inbox.trim(user, cap)


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
    limits, reasons = routes(tx, event, event_type, candidates)
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
                         fields=event_type.query_fields(event.payload), reasons=reasons)
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
