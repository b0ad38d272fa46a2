"""Deliver one chunk of an audience: filter, write inbox rows (bundled), timelines, channels."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from tidings.channels.registry import Channel, Outgoing
from tidings.domain.bundling import bundle_hash
from tidings.domain.preferences import plan
from tidings.domain.types import EventType
from tidings.domain.views import Delivery, StoredEvent
from tidings.fanout.specs import trim_spec
from tidings.jobs.context import JobContext
from tidings.ports import Tx

TRIM_SAMPLE = 0.02  # share of deliveries that check the recipient's inbox cap


def write_inbox(tx: Tx, event: StoredEvent, *, category: str, section: str, bundle: str,
                users: Iterable[str], now: int, writer: str = "") -> list[str]:
    """Write one notification per user for ``event``; return the users newly notified.

    Idempotent: users who already have this event are skipped. A bundled notification joins
    the newest display group of its bundle hash while that group is unread, else starts one
    (:func:`tidings.domain.bundling.join_or_start`, applied by ``InboxStore.deliver``).
    """
    delivery = Delivery(
        event_id=event.id, created_at=now, type=event.type, category=category, section=section,
        actor=event.actor, object=event.object,
        bundle_hash=bundle_hash(bundle, event.type, event.actor, event.object, event.id),
        bundled=bundle != "none", writer=writer)
    return tx.inbox.deliver(delivery, sorted(set(users)))


def deliver(ctx: JobContext, tx: Tx, event: StoredEvent, users: Iterable[str],
            channels: Sequence[Channel], *, at: int | None = None,
            timeline: Sequence[str] = (), writer: str = "") -> list[str]:
    """Filter an audience chunk and deliver it; returns the users notified in the inbox.

    ``timeline`` names the actor's followers in this chunk: the push model writes the event
    into their timelines too (same filters: exclusions and mutes). ``writer`` names the job
    delivering (see :class:`tidings.domain.views.Delivery`).
    """
    excluded = set(event.exclude)
    if event.actor is not None:
        excluded.add(event.actor)
    candidates = sorted(u for u in set(users) if u not in excluded)
    if not candidates:
        return []
    muted = tx.graph.muting(candidates, event.actor, event.object)
    candidates = [u for u in candidates if u not in muted]
    now = at if at is not None else ctx.clock.now_us()
    if not ctx.catalog.known(event.type):  # a type since removed: the inbox only
        delivered = write_inbox(tx, event, category="general", section="alert", bundle="none",
                                users=candidates, now=now, writer=writer)
    else:
        delivered = _by_channel(ctx, tx, event, ctx.catalog.types.get(event.type), candidates,
                                channels, now, backfill=at is not None, writer=writer)
    if timeline:
        allowed = set(candidates)
        tx.timeline.push(event.id, [u for u in timeline if u in allowed], now)
    if delivered:
        notifier = ctx.store.notifier
        tx.after_commit(lambda: notifier.changed(delivered))
    checks = [u for u in delivered if random.random() < TRIM_SAMPLE]
    tx.jobs.enqueue_many([trim_spec(u) for u in checks])
    ctx.observer.delivered(len(delivered))
    return delivered


def _by_channel(ctx: JobContext, tx: Tx, event: StoredEvent, event_type: EventType,
                candidates: list[str], channels: Sequence[Channel], now: int, *,
                backfill: bool, writer: str) -> list[str]:
    """Inbox rows for users with the web channel on; other channels as preferences say."""
    prefs = tx.settings.preferences_many(candidates)
    addresses = [str(p["email"]["address"]) for p in prefs.values()
                 if isinstance(p.get("email"), dict) and p["email"].get("address")]
    bounced = tx.settings.bounced(addresses)
    plans = {
        user: plan(prefs.get(user), event_type,
                   str((prefs.get(user, {}).get("email") or {}).get("address", "")).lower()
                   in bounced)
        for user in candidates
    }
    delivered = write_inbox(tx, event, category=event_type.category,
                            section=event_type.section, bundle=event_type.bundle,
                            users=[u for u in candidates if plans[u].web], now=now,
                            writer=writer)
    if backfill:
        return delivered  # an imported event is history: no mail, no webhooks
    reached = set(delivered) | {u for u in candidates if not plans[u].web}
    outgoing = Outgoing(event=event, event_type=event_type,
                        bundle_hash=bundle_hash(event_type.bundle, event.type, event.actor,
                                                event.object, event.id),
                        plans={u: plans[u] for u in sorted(reached)}, prefs=prefs, now=now)
    for channel in channels:
        channel.schedule(ctx, tx, outgoing)
    return delivered
