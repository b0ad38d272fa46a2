"""Webhooks: POST a JSON notification, signed with HMAC-SHA256 over "timestamp.body".

Headers: ``X-Tidings-Timestamp`` (seconds) and ``X-Tidings-Signature: sha256=<hex>``. A receiver
recomputes the HMAC with the shared secret (``TIDINGS_WEBHOOK_SECRET``) and rejects old
timestamps. Any answer but 2xx is retried with backoff; every attempt is logged. The POST runs
outside any database transaction (``prepare`` → ``send`` → ``finish``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, replace

import httpx

from tidings.channels.registry import Channel, Outgoing
from tidings.clock import to_rfc3339
from tidings.exceptions import JobError
from tidings.jobs.context import Handler, JobContext, Replacements
from tidings.jobs.model import Job, JobSpec, backoff_us
from tidings.ports import Tx

WEBHOOK = "webhook"
TIMEOUT_SECONDS = 10.0


def spec(user: str, event_id: int, url: str) -> JobSpec:
    return JobSpec(WEBHOOK, {"user": user, "event_id": event_id, "url": url},
                   unique_key=f"webhook:{event_id}:{user}"[:255], priority=4)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def schedule(ctx: JobContext, tx: Tx, out: Outgoing) -> None:
    """One delivery job per user whose plan names a webhook (none without a secret)."""
    if not ctx.config.webhook_secret:
        return
    tx.jobs.enqueue_many([spec(u, out.event.id, plan.webhook)
                          for u, plan in out.plans.items() if plan.webhook])


@dataclass(frozen=True)
class Request:
    event_id: int
    url: str
    body: bytes
    headers: dict[str, str]


def prepare(ctx: JobContext, tx: Tx, job: Job) -> Request | None:
    event = tx.events.get(int(job.args["event_id"]))
    if event is None or event.retracted_at is not None:
        return None
    secret = ctx.config.webhook_secret
    if not secret:
        raise JobError("webhooks need TIDINGS_WEBHOOK_SECRET to sign their requests")
    body = json.dumps({
        "user": job.args["user"],
        "event": {"id": str(event.id), "type": event.type, "actor": event.actor,
                  "object": event.object, "payload": event.payload,
                  "created_at": to_rfc3339(event.created_at)},
    }, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "User-Agent": "tidings-webhook/1",
               "X-Tidings-Timestamp": timestamp,
               "X-Tidings-Signature": sign(secret, timestamp, body),
               "X-Tidings-Delivery": f"{event.id}:{job.args['user']}"}
    return Request(event.id, job.args["url"], body, headers)


def send(ctx: JobContext, request: Request) -> tuple[int | None, str | None]:
    """The POST: (status, error), error None on a 2xx."""
    try:
        response = httpx.post(request.url, content=request.body, headers=request.headers,
                              timeout=TIMEOUT_SECONDS)
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:1000]
    status = response.status_code
    return status, None if 200 <= status < 300 else f"receiver answered {status}"


def finish(ctx: JobContext, tx: Tx, job: Job, request: Request,
           outcome: tuple[int | None, str | None]) -> Replacements:
    status, error = outcome
    attempt = int(job.args.get("attempt", 1))
    now = ctx.clock.now_us()
    tx.mail.log_webhook(job.args["user"], request.event_id, request.url, status, attempt,
                        error, now)
    if error is None:
        return None
    # Retried here rather than by raising, so the attempt's log row is kept.
    if attempt >= ctx.config.job_max_attempts:
        tx.jobs.record_failure(replace(job, attempts=attempt), error, final=True, now=now)
        return None
    delay = backoff_us(attempt, int(ctx.config.job_backoff_seconds * 1_000_000),
                       3600 * 1_000_000)
    return [JobSpec(WEBHOOK, {**job.args, "attempt": attempt + 1}, unique_key=job.unique_key,
                    priority=job.priority, run_after=now + delay)]


CHANNEL = Channel(name="webhook", schedule=schedule,
                  handlers={WEBHOOK: Handler(prepare=prepare, send=send, finish=finish)},
                  enabled=lambda config: bool(config.webhook_secret))
