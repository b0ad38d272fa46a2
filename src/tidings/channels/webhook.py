"""Webhooks: POST a JSON notification, signed as the Standard Webhooks specification says.

Headers: ``webhook-id`` (``msg_…``, the same on every attempt of one delivery: the receiver's
deduplication key), ``webhook-timestamp`` (seconds) and ``webhook-signature: v1,<base64>``, the
HMAC-SHA256 of ``id.timestamp.body`` under the key of ``TIDINGS_WEBHOOK_SECRET``
(:func:`signing_key`; receivers verify with :func:`receiver_secret`, a ``whsec_`` secret, and any
Standard Webhooks library). The former headers (``X-Tidings-Timestamp``,
``X-Tidings-Signature: sha256=<hex>`` over ``timestamp.body``, ``X-Tidings-Delivery``) are still
sent for receivers that check them, and deprecated. Any answer but 2xx is retried with backoff;
every attempt is logged. The POST runs outside any database transaction (``prepare`` → ``send``
→ ``finish``).

Before each POST the URL is checked again and its host resolved (``channels/netguard.py``); the
POST goes to the checked address with short timeouts (``channels/pinned.py``). Webhook jobs run
on worker threads of their own (``Tidings.worker``), so a slow receiver never delays fan-out,
and at most ``TIDINGS_WEBHOOK_HOST_CONCURRENCY`` of those threads deliver to one host at once
(each delivery's job is in its host's group, :func:`host_group`), so a receiver that never
answers cannot hold up another host's deliveries either.

A circuit breaker per endpoint (the URL's host), kept in the store so every worker shares it:
after :data:`BREAKER_THRESHOLD` consecutive failures that say the endpoint is in trouble (no
answer, a timeout, 5xx, 408, 429) the endpoint is paused for :data:`BREAKER_PAUSE_US`, doubling
with each further failure up to :data:`BREAKER_PAUSE_CAP_US`. Jobs for a paused endpoint are
moved to the end of the pause without counting an attempt; the first one after it is the probe.
Any other answer (2xx, or a 4xx that only concerns one URL) closes the breaker.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from tidings.channels import netguard, pinned
from tidings.channels.registry import Channel, Outgoing
from tidings.clock import to_rfc3339
from tidings.config import Config
from tidings.exceptions import ConfigError, JobError
from tidings.jobs.context import Handler, JobContext, Replacements
from tidings.jobs.model import SECOND, Job, JobSpec, backoff_us, grouped_key
from tidings.ports import Tx

WEBHOOK = "webhook"
BREAKER_THRESHOLD = 5
BREAKER_PAUSE_US = 30 * SECOND
BREAKER_PAUSE_CAP_US = 3600 * SECOND
TROUBLE_STATUSES = frozenset({408, 429})


def host_group(url: str) -> str:
    """The job group of deliveries to the URL's host (:func:`~tidings.jobs.model.group_of`):
    the webhook lane runs at most ``TIDINGS_WEBHOOK_HOST_CONCURRENCY`` of them at once."""
    return hashlib.sha256(netguard.endpoint_of(url).encode()).hexdigest()[:20]


def spec(user: str, event_id: int, url: str) -> JobSpec:
    return JobSpec(WEBHOOK, {"user": user, "event_id": event_id, "url": url},
                   unique_key=grouped_key(WEBHOOK, host_group(url), f"{event_id}:{user}"),
                   priority=4)


STANDARD_PREFIX = "whsec_"


def signing_key(secret: str) -> bytes:
    """The HMAC key of a webhook secret: the bytes a ``whsec_<base64>`` secret encodes, or any
    other secret's UTF-8 bytes (so a secret chosen before ``whsec_`` keeps working). Raises
    ValueError for a ``whsec_`` secret that is not base64."""
    if not secret.startswith(STANDARD_PREFIX):
        return secret.encode()
    try:
        encoded = secret[len(STANDARD_PREFIX):]
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a whsec_ secret must be whsec_ followed by base64") from None
    if not key:
        raise ValueError("a whsec_ secret must be whsec_ followed by base64")
    return key


def receiver_secret(secret: str) -> str:
    """The ``whsec_`` form of the secret that a receiver hands to its Standard Webhooks
    library: the secret itself if it has that form already."""
    return STANDARD_PREFIX + base64.b64encode(signing_key(secret)).decode()


def new_secret() -> str:
    """A fresh ``whsec_`` secret (32 random bytes) for ``TIDINGS_WEBHOOK_SECRET``."""
    return STANDARD_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def message_id(event_id: int, user: str) -> str:
    """The ``webhook-id`` of the delivery of one event to one user: the same on every attempt
    (and after a worker crash), different for every other delivery."""
    digest = hashlib.sha256(f"{event_id}:{user}".encode()).digest()[:18]
    return "msg_" + base64.urlsafe_b64encode(digest).decode()


def sign_standard(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,`` and the base64 HMAC-SHA256 of
    ``id.timestamp.body``."""
    digest = hmac.new(signing_key(secret), f"{msg_id}.{timestamp}.".encode() + body,
                      hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The deprecated ``X-Tidings-Signature`` value (the secret's UTF-8 bytes as the key)."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def schedule(ctx: JobContext, tx: Tx, out: Outgoing) -> None:
    """One delivery job per user whose plan names a webhook (none without a secret)."""
    if not ctx.config.webhook_secret:
        return
    tx.jobs.enqueue_many([spec(u, out.event.id, plan.webhook)
                          for u, plan in out.plans.items() if plan.webhook])


def url_check(config: Config) -> Callable[[str], None]:
    """The check a new webhook URL passes when preferences are saved (a ValueError says why
    not). A host that does not resolve now is accepted if it would need no allow-list entry:
    every delivery checks again."""
    try:
        allow = netguard.allow_list(config.webhook_allow)
    except ValueError as exc:
        raise ConfigError(f"TIDINGS_WEBHOOK_ALLOW: {exc}") from None

    def check(url: str) -> None:
        netguard.check(url, allow, unresolved_ok=True)

    return check


def pause_after(failures: int) -> int:
    """How long (µs) an endpoint rests after ``failures`` consecutive failures (0: it does not)."""
    if failures < BREAKER_THRESHOLD:
        return 0
    doublings: int = min(failures - BREAKER_THRESHOLD, 20)
    return min(BREAKER_PAUSE_US << doublings, BREAKER_PAUSE_CAP_US)


@dataclass(frozen=True)
class Request:
    event_id: int
    url: str
    host: str
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    paused_until: int | None = None  # the endpoint rests: nothing is sent


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to. ``health``: "up" (the endpoint answered), "down" (it is in
    trouble) or None (not contacted). ``final``: no point in trying again."""

    status: int | None
    error: str | None
    health: str | None = None
    final: bool = False
    paused: bool = False


def prepare(ctx: JobContext, tx: Tx, job: Job) -> Request | None:
    event = tx.events.get(int(job.args["event_id"]))
    if event is None or event.retracted_at is not None:
        return None
    secret = ctx.config.webhook_secret
    if not secret:
        raise JobError("webhooks need TIDINGS_WEBHOOK_SECRET to sign their requests")
    url = str(job.args["url"])
    host = netguard.endpoint_of(url)
    breaker = tx.mail.webhook_endpoint(host)
    if breaker is not None and breaker[1] > ctx.clock.now_us():
        return Request(event.id, url, host, paused_until=breaker[1])
    body = json.dumps({
        "user": job.args["user"],
        "event": {"id": str(event.id), "type": event.type, "actor": event.actor,
                  "object": event.object, "payload": event.payload,
                  "created_at": to_rfc3339(event.created_at)},
    }, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))  # the receiver's clock judges it: wall time
    msg_id = message_id(event.id, str(job.args["user"]))
    headers = {"Content-Type": "application/json", "User-Agent": "tidings-webhook/1",
               "webhook-id": msg_id, "webhook-timestamp": timestamp,
               "webhook-signature": sign_standard(secret, msg_id, timestamp, body),
               "X-Tidings-Timestamp": timestamp,
               "X-Tidings-Signature": sign(secret, timestamp, body),
               "X-Tidings-Delivery": f"{event.id}:{job.args['user']}"}
    return Request(event.id, url, host, body, tuple(headers.items()))


def send(ctx: JobContext, request: Request) -> Outcome:
    """Check the URL again (DNS may have changed), then POST to the checked address."""
    if request.paused_until is not None:
        return Outcome(None, None, paused=True)
    config = ctx.config
    try:
        target = netguard.check(request.url, netguard.allow_list(config.webhook_allow))
    except netguard.UnsafeUrl as exc:
        return Outcome(None, f"refused: {exc}"[:1000], final=True)
    except netguard.Unresolvable as exc:
        return Outcome(None, str(exc)[:1000], health="down")
    answer = pinned.post(target, request.body, dict(request.headers), pinned.Timeouts(
        config.webhook_connect_timeout, config.webhook_read_timeout))
    status = answer.status
    down = status is None or status >= 500 or status in TROUBLE_STATUSES
    return Outcome(status, answer.error, health="down" if down else "up")


def _breaker(tx: Tx, host: str, outcome: Outcome, now: int) -> int:
    """Record the attempt in the endpoint's breaker; return when its pause ends (0: none)."""
    if outcome.health is None:
        return 0
    state = tx.mail.webhook_endpoint(host)
    failures = state[0] if state is not None else 0
    if outcome.health == "up":
        if state is not None:
            tx.mail.save_webhook_endpoint(host, 0, 0)
        return 0
    failures += 1
    pause = pause_after(failures)
    until = now + pause if pause else 0
    tx.mail.save_webhook_endpoint(host, failures, until)
    return until


def finish(ctx: JobContext, tx: Tx, job: Job, request: Request,
           outcome: Outcome) -> Replacements:
    now = ctx.clock.now_us()
    if outcome.paused:
        # not an attempt: the job waits for the end of the pause with its count unchanged
        return [JobSpec(WEBHOOK, dict(job.args), unique_key=job.unique_key,
                        priority=job.priority, run_after=max(request.paused_until or 0, now))]
    attempt = int(job.args.get("attempt", 1))
    tx.mail.log_webhook(job.args["user"], request.event_id, request.url, outcome.status,
                        attempt, outcome.error, now)
    paused_until = _breaker(tx, request.host, outcome, now)
    observer = ctx.observer
    delivered = "delivered" if outcome.error is None else "failed"
    tx.after_commit(lambda: observer.delivery("webhook", delivered))
    if outcome.error is None:
        return None
    # Retried here rather than by raising, so the attempt's log row is kept.
    if outcome.final or attempt >= ctx.config.job_max_attempts:
        tx.jobs.record_failure(replace(job, attempts=attempt), outcome.error, final=True,
                               now=now)
        return None
    delay = backoff_us(attempt, int(ctx.config.job_backoff_seconds * SECOND), 3600 * SECOND)
    return [JobSpec(WEBHOOK, {**job.args, "attempt": attempt + 1}, unique_key=job.unique_key,
                    priority=job.priority, run_after=max(now + delay, paused_until))]


CHANNEL = Channel(name="webhook", schedule=schedule,
                  handlers={WEBHOOK: Handler(prepare=prepare, send=send, finish=finish)},
                  enabled=lambda config: bool(config.webhook_secret))
