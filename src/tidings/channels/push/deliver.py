"""The push job of one (user, display bundle), in three steps: read what to send and to which
endpoints (``prepare``), encrypt and POST it outside any unit of work (``send``), then forget
the endpoints the push service says are gone and retry the others (``finish``).

The payload is small JSON: ``title``, ``body``, ``link``, ``unread`` (the user's count), ``id``
(the newest event's) and ``group`` (its display group), encrypted for each browser
(``aes128gcm``, RFC 8291, with ``http_ece``) and signed for the push service (a VAPID JWT,
RFC 8292, with ``py_vapid``: ``aud`` the endpoint's origin, ``sub`` ``TIDINGS_VAPID_SUBJECT``,
``exp`` twelve hours on). ``Topic`` is a hash of the bundle, so a newer push for the same group
replaces one the device has not shown yet; ``TTL`` and ``Urgency`` follow the type's priority.

Answers: 2xx delivered; 404 or 410 the subscription is gone (deleted); 429, 5xx, no answer or
a host that does not resolve are retried with the job queue's backoff, no sooner than the
answer's ``Retry-After``; any other 4xx is final for that endpoint.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Any

import http_ece
from cryptography.hazmat.primitives.asymmetric import ec

from tidings.channels import netguard, pinned
from tidings.channels.push.keys import load
from tidings.domain.links import absolute_link
from tidings.domain.preferences import channel_on
from tidings.domain.push import PushSubscription, b64url_decode, endpoint_hash
from tidings.domain.rendering import RenderContext, render_all
from tidings.domain.views import Filters
from tidings.i18n import normalise_locale
from tidings.jobs.context import JobContext, Replacements
from tidings.jobs.model import SECOND, Job, JobSpec, backoff_us
from tidings.ports import Tx

PUSH = "push"
GONE = frozenset({404, 410})
RETRY = frozenset({408, 425, 429})
JWT_LIFETIME = 12 * 3600  # seconds; RFC 8292 allows at most 24 hours
RETRY_AFTER_CAP = 24 * 3600
TITLE_CAP, BODY_CAP, LINK_CAP = 200, 300, 1000


def spec(user: str, event_id: int, bundle_hash: str, priority: int, *,
         run_after: int | None = None) -> JobSpec:
    """The push of ``user``'s display bundle ``bundle_hash``: one queued job per pair (run at
    ``run_after``, µs, for a type's ``push_delay_seconds``; else at once)."""
    return JobSpec(PUSH, {"user": user, "event_id": event_id, "bundle": bundle_hash,
                          "priority": priority},
                   unique_key=f"{PUSH}:{bundle_hash}:{user}"[:255], priority=4,
                   run_after=run_after)


def urgency(priority: int) -> tuple[str, int]:
    """The ``Urgency`` and ``TTL`` (seconds) of a type's priority (1 highest, 10 lowest)."""
    if priority <= 2:
        return "high", 7 * 86400
    if priority <= 5:
        return "normal", 86400
    if priority <= 8:
        return "low", 4 * 3600
    return "very-low", 3600


def topic(bundle_hash: str) -> str:
    """32 URL-safe characters naming the bundle: a newer push with it replaces the older."""
    digest = hashlib.sha256(bundle_hash.encode()).digest()[:24]
    return base64.urlsafe_b64encode(digest).decode()


@dataclass(frozen=True)
class Request:
    event_id: int
    group: str | None
    count: int  # the group's size when read: a larger one in ``finish`` means it grew
    body: bytes
    headers: tuple[tuple[str, str], ...]
    subscriptions: tuple[PushSubscription, ...]


@dataclass(frozen=True)
class Result:
    subscription: PushSubscription
    status: int | None
    error: str | None
    retry: bool = False
    retry_after: int = 0  # seconds the push service asked to wait


def _group(tx: Tx, user: str, event_id: int) -> tuple[str | None, list[str], int]:
    groups = tx.inbox.groups_by_ids(user, [event_id])
    if not groups:
        return None, [], 1  # web channel off: no inbox row, the event alone
    info = tx.inbox.group_info(user, groups[:1]).get(groups[0])
    return groups[0], (info.actors if info else []), (info.count if info else 1)


def _read(tx: Tx, user: str, event_id: int) -> bool:
    """Whether the user's notification of the event is read (no inbox row: not read)."""
    states = tx.inbox.read_states(user, [event_id])
    if not states:
        return False
    state = states[0]
    return not tx.inbox.load_markers(user).is_unread(
        state.read_at, state.fresh_at, state.type, state.category, state.section,
        position=(state.created_at, state.event_id))


def prepare(ctx: JobContext, tx: Tx, job: Job) -> Request | None:
    user = str(job.args["user"])
    event = tx.events.get(int(job.args["event_id"]))
    if event is None or event.retracted_at is not None:
        return None
    subscriptions = tx.push.push_subscriptions(user)
    only = job.args.get("only")
    if only is not None:
        subscriptions = [s for s in subscriptions if s.id in set(only)]
    if not subscriptions or not ctx.config.vapid_private_key:
        return None
    event_type = ctx.catalog.get(event.type)
    prefs = tx.settings.preferences(user) or {}
    if not channel_on(prefs, event_type, "push"):
        return None  # turned off since fan-out
    if _read(tx, user, event.id):
        return None  # read on the web meanwhile (a retry's wait): nothing to tell
    group, actors, count = _group(tx, user, event.id)
    actors = actors or ([event.actor] if event.actor else [])
    rendered = render_all(event_type, RenderContext(
        type=event.type, actor=event.actor, object=event.object, payload=event.payload,
        actors=actors[:3], count=count, others=max(len(actors) - 1, 0), event_id=str(event.id)),
        normalise_locale(prefs.get("locale")), ctx.config.link_origins)
    link = absolute_link(rendered.link, ctx.config.public_url, ctx.config.link_origins)
    unread = tx.inbox.unread_count(user, Filters())
    body = json.dumps({
        "title": rendered.title[:TITLE_CAP],
        "body": (rendered.body or "")[:BODY_CAP] or None,
        "link": link if link and len(link) <= LINK_CAP else None,
        "unread": unread, "id": str(event.id), "group": group,
    }, separators=(",", ":")).encode()
    level, ttl = urgency(int(job.args.get("priority", event_type.priority)))
    headers = {"Content-Type": "application/octet-stream", "Content-Encoding": "aes128gcm",
               "TTL": str(ttl), "Urgency": level, "Topic": topic(str(job.args["bundle"])),
               "User-Agent": "tidings-push/1"}
    return Request(event.id, group, count, body, tuple(headers.items()), tuple(subscriptions))


def encrypt(body: bytes, subscription: PushSubscription) -> bytes:
    """The payload for one browser (RFC 8291): a new sender key every message."""
    return bytes(http_ece.encrypt(
        body, private_key=ec.generate_private_key(ec.SECP256R1()),
        dh=b64url_decode(subscription.p256dh), auth_secret=b64url_decode(subscription.auth),
        version="aes128gcm"))


def authorization(ctx: JobContext, target: netguard.Target) -> dict[str, str]:
    """The VAPID header for the push service at ``target`` (``aud``: its origin)."""
    assert ctx.config.vapid_private_key
    url = target.url
    port = "" if url.port is None else f":{url.port}"
    claims = {"aud": f"{url.scheme}://{target.host}{port}",
              "sub": ctx.config.vapid_subject, "exp": int(time.time()) + JWT_LIFETIME}
    headers: dict[str, str] = load(ctx.config.vapid_private_key).vapid.sign(claims)
    return {"Authorization": headers["Authorization"]}


def retry_after(value: str | None) -> int:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), capped."""
    if not value:
        return 0
    try:
        seconds = int(value.strip())
    except ValueError:
        try:
            seconds = int(parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return 0
    return max(0, min(seconds, RETRY_AFTER_CAP))


def _send_one(ctx: JobContext, request: Request, subscription: PushSubscription) -> Result:
    config = ctx.config
    try:
        target = netguard.check(subscription.endpoint, netguard.allow_list(config.webhook_allow))
    except netguard.UnsafeUrl as exc:
        return Result(subscription, None, f"refused: {exc}"[:1000])
    except netguard.Unresolvable as exc:
        return Result(subscription, None, str(exc)[:1000], retry=True)
    headers = {**dict(request.headers), **authorization(ctx, target)}
    answer = pinned.post(target, encrypt(request.body, subscription), headers, pinned.Timeouts(
        config.webhook_connect_timeout, config.webhook_read_timeout))
    status = answer.status
    again = status is None or status >= 500 or status in RETRY
    return Result(subscription, status, answer.error, retry=again,
                  retry_after=retry_after(answer.retry_after) if again else 0)


def send(ctx: JobContext, request: Request) -> list[Result]:
    return [_send_one(ctx, request, s) for s in request.subscriptions]


def finish(ctx: JobContext, tx: Tx, job: Job, request: Request,
           results: list[Result]) -> Replacements:
    now = ctx.clock.now_us()
    gone = [s.subscription for s in results if s.status in GONE]
    if gone:
        tx.push.delete_push_endpoints([endpoint_hash(s.endpoint) for s in gone])
    delivered = sum(1 for r in results if r.error is None)
    failed = len(results) - delivered - len(gone)
    observer = ctx.observer

    def count() -> None:
        observer.delivery(PUSH, "delivered", delivered)
        observer.delivery(PUSH, "failed", failed)

    tx.after_commit(count)
    replacements: list[JobSpec] = []
    retry = [r for r in results if r.retry]
    attempt = int(job.args.get("attempt", 1))
    final = [r for r in results if r.error is not None and not r.retry and r.status not in GONE]
    if final or (retry and attempt >= ctx.config.job_max_attempts):
        errors = "; ".join(f"{r.subscription.id}: {r.error}" for r in final + retry)
        tx.jobs.record_failure(replace(job, attempts=attempt), errors[:1000],
                               final=not retry or attempt >= ctx.config.job_max_attempts,
                               now=now)
    if retry and attempt < ctx.config.job_max_attempts:
        delay = backoff_us(attempt, int(ctx.config.job_backoff_seconds * SECOND), 3600 * SECOND)
        wait = max(delay, max(r.retry_after for r in retry) * SECOND)
        args: dict[str, Any] = {**job.args, "attempt": attempt + 1,
                                "only": [r.subscription.id for r in retry]}
        replacements.append(JobSpec(PUSH, args, unique_key=job.unique_key,
                                    priority=job.priority, run_after=now + wait))
    elif request.group is not None and delivered and _grew(tx, job, request):
        # the bundle grew while this push was on its way: push its newer state
        args = {k: v for k, v in job.args.items() if k not in ("attempt", "only")}
        replacements.append(JobSpec(PUSH, args, unique_key=job.unique_key,
                                    priority=job.priority))
    return replacements or None


def _grew(tx: Tx, job: Job, request: Request) -> bool:
    assert request.group is not None
    info: Mapping[str, Any] = tx.inbox.group_info(str(job.args["user"]), [request.group])
    now = info.get(request.group)
    return now is not None and now.count > request.count
