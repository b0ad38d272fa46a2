"""Fan-out jobs (LiveJournal ESN): an event's audience, resolved in chunks, into inboxes.

``fanout`` (ESN's FiredEvent) looks at each audience source. If the whole audience fits in one
chunk it is delivered in the same job (the fast path). Otherwise the job is replaced atomically
by one ``fanout_chunk`` job per chunk of a source (``replace_with``), which any worker may run.
Sources overlap freely: a user named twice is written once, because (user, event) is unique.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from tidings.channels import email, webhook
from tidings.channels import preferences as channel_prefs
from tidings.domain.types import EventType
from tidings.jobs.queue import Job, JobSpec
from tidings.store.sql import graph, inbox
from tidings.store.sql.events import StoredEvent, get_event

if TYPE_CHECKING:
    from tidings.engine import Tidings

FANOUT = "fanout"
FANOUT_CHUNK = "fanout_chunk"
TRIM = "trim_inbox"
TRIM_SAMPLE = 0.02  # share of deliveries that check the recipient's inbox cap


def fanout_spec(event_id: int, priority: int = 5, at: int | None = None) -> JobSpec:
    """The job that fans an event out. ``at`` dates a back-filled event's notifications in
    the past; live ones are dated at delivery, so they always land on top of an inbox."""
    args: dict[str, Any] = {"event_id": event_id}
    if at is not None:
        args["at"] = at
    return JobSpec(FANOUT, args, unique_key=f"fanout:{event_id}", priority=priority)


def _known(tidings: Tidings, type_name: str) -> bool:
    """Whether the type is declared; a worker started before another process declared it
    (``define_type``) reads the stored types again rather than fall back to defaults."""
    if type_name not in tidings.types:
        tidings.load_types()
    return type_name in tidings.types


def _sources(tidings: Tidings, event: StoredEvent) -> list[str]:
    if _known(tidings, event.type):
        audience = tidings.types.get(event.type).audience
    else:
        audience = ("recipients",)
    return [s for s in graph.SOURCES if s in audience]


def run_fanout(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    """Handle a ``fanout`` job: deliver at once, or return the chunk jobs that replace it."""
    event = get_event(conn, int(job.args["event_id"]), lock=True)
    if event is None or event.retracted_at is not None:
        return None
    chunk = tidings.config.chunk_size
    audience: set[str] = set()
    followers: list[str] = []
    specs: list[JobSpec] = []
    for source in _sources(tidings, event):
        if source == "recipients":
            audience.update(event.recipients)
            continue
        query = graph.source_query(source, event.type, event.actor, event.object)
        if query is None:
            continue
        first = graph.users_in_range(conn, query, "", None, limit=chunk + 1)
        if len(first) <= chunk:
            audience.update(first)
            if source == "actor_followers":
                followers = first
            continue
        after = ""
        while True:
            upto = graph.nth_user_after(conn, query, after, chunk)
            if upto is not None and graph.nth_user_after(conn, query, upto, 1) is None:
                upto = None  # the rest fills this chunk exactly: no empty chunk after it
            specs.append(_chunk_spec(event.id, source, after, upto, job))
            if upto is None:
                break
            after = upto
    if specs:
        if audience:
            specs.append(JobSpec(FANOUT_CHUNK, {**job.args, "source": "users",
                                                "users": sorted(audience)},
                                 unique_key=f"fanout:{event.id}:users", priority=job.priority))
        return specs
    deliver(tidings, conn, event, audience, at=job.args.get("at"), timeline=followers)
    return None


def _chunk_spec(event_id: int, source: str, after: str, upto: str | None, job: Job) -> JobSpec:
    return JobSpec(FANOUT_CHUNK,
                   {**job.args, "source": source, "after": after, "upto": upto},
                   unique_key=f"fanout:{event_id}:{source}:{after}"[:255], priority=job.priority)


def run_fanout_chunk(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    event = get_event(conn, int(job.args["event_id"]), lock=True)
    if event is None or event.retracted_at is not None:
        return None
    source = job.args["source"]
    if source == "users":
        users = list(job.args["users"])
    else:
        query = graph.source_query(source, event.type, event.actor, event.object)
        users = [] if query is None else graph.users_in_range(
            conn, query, job.args["after"], job.args["upto"])
    timeline = users if source == "actor_followers" else ()
    deliver(tidings, conn, event, users, at=job.args.get("at"), timeline=timeline)
    return None


def deliver(tidings: Tidings, conn: Connection, event: StoredEvent, users: Any, *,
            at: int | None = None, timeline: Sequence[str] = ()) -> list[str]:
    """Filter an audience chunk and write its inbox rows; returns the users notified.

    ``timeline`` names the actor's followers in this chunk: the push model writes the event
    into their timelines too (same filters: exclusions and mutes).
    """
    excluded = set(event.exclude)
    if event.actor is not None:
        excluded.add(event.actor)
    candidates = sorted(u for u in set(users) if u not in excluded)
    if not candidates:
        return []
    muted = graph.muting_users(conn, candidates, event.actor, event.object)
    candidates = [u for u in candidates if u not in muted]
    now = at if at is not None else tidings.clock.now_us()
    if not _known(tidings, event.type):  # a type since removed: the inbox only
        delivered = inbox.deliver(tidings.db, conn, event, category="general", section="alert",
                                  bundle="none", users=candidates, now=now)
    else:
        delivered = _deliver_by_channel(tidings, conn, event, tidings.types.get(event.type),
                                        candidates, now, backfill=at is not None)
    if timeline:
        allowed = set(candidates)
        inbox.push_timeline(tidings.db, conn, event.id, [u for u in timeline if u in allowed],
                            now)
    checks = [u for u in delivered if random.random() < TRIM_SAMPLE]
    if checks:
        tidings.queue.enqueue_many(conn, [
            JobSpec(TRIM, {"user": u}, unique_key=f"trim:{u}", priority=9) for u in checks
        ])
    tidings.metrics_delivered(len(delivered))
    return delivered


def _deliver_by_channel(tidings: Tidings, conn: Connection, event: StoredEvent,
                        event_type: EventType, candidates: list[str], now: int, *,
                        backfill: bool) -> list[str]:
    """Inbox rows for users with the web channel on; mail and webhooks as preferences say."""
    prefs = channel_prefs.load_many(conn, candidates)
    addresses = [str(p["email"]["address"]) for p in prefs.values()
                 if isinstance(p.get("email"), dict) and p["email"].get("address")]
    bounced = channel_prefs.bounced(conn, addresses)
    plans = {
        user: channel_prefs.plan(prefs.get(user), event_type,
                                 str((prefs.get(user, {}).get("email") or {}).get("address", ""))
                                 .lower() in bounced)
        for user in candidates
    }
    delivered = inbox.deliver(tidings.db, conn, event, category=event_type.category,
                              section=event_type.section, bundle=event_type.bundle,
                              users=[u for u in candidates if plans[u].web], now=now)
    if backfill:
        return delivered  # an imported event is history: no mail, no webhooks
    reached = set(delivered) | {u for u in candidates if not plans[u].web}
    outgoing = {u: plans[u] for u in sorted(reached)}
    # no SMTP server configured: the email channel is off (likewise webhooks without a secret)
    if tidings.config.smtp_url and any(plan.email for plan in outgoing.values()):
        email.schedule(tidings, conn, event, inbox.hash_of(event, event_type.bundle),
                       event_type.bundle != "none", event_type.priority, outgoing, prefs, now)
    hooks = [webhook.spec(u, event.id, plan.webhook) for u, plan in outgoing.items()
             if plan.webhook and tidings.config.webhook_secret]
    tidings.queue.enqueue_many(conn, hooks)
    return delivered


def run_trim(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    """Keep one user's inbox under the cap (background only, never on a read)."""
    removed = inbox.trim_user(conn, job.args["user"], tidings.config.inbox_cap)
    removed += inbox.trim_timeline(conn, job.args["user"], tidings.config.timeline_cap)
    if removed:
        return [JobSpec(TRIM, {"user": job.args["user"]},
                        unique_key=f"trim:{job.args['user']}", priority=9)]
    return None

