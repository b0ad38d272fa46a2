"""Webhooks: POST a JSON notification, signed with HMAC-SHA256 over "timestamp.body".

Headers: ``X-Tidings-Timestamp`` (seconds) and ``X-Tidings-Signature: sha256=<hex>``. A receiver
recomputes the HMAC with the shared secret (``TIDINGS_WEBHOOK_SECRET``) and rejects old
timestamps. Any answer but 2xx is retried with backoff; every attempt is logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import TYPE_CHECKING

import httpx
from sqlalchemy import Connection, insert

from tidings.clock import to_rfc3339
from tidings.exceptions import JobError
from tidings.jobs.queue import Job, JobSpec
from tidings.store.sql.events import get_event
from tidings.store.sql.schema import job_failures, webhook_deliveries

if TYPE_CHECKING:
    from tidings.engine import Tidings

WEBHOOK = "webhook"


def spec(user: str, event_id: int, url: str) -> JobSpec:
    return JobSpec(WEBHOOK, {"user": user, "event_id": event_id, "url": url},
                   unique_key=f"webhook:{event_id}:{user}"[:255], priority=4)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def run(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    event = get_event(conn, int(job.args["event_id"]))
    if event is None or event.retracted_at is not None:
        return None
    secret = tidings.config.webhook_secret
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
    status: int | None = None
    error: str | None = None
    try:
        response = httpx.post(job.args["url"], content=body, headers=headers, timeout=10.0)
        status = response.status_code
        if not 200 <= status < 300:
            error = f"receiver answered {status}"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:1000]
    attempt = int(job.args.get("attempt", 1))
    now = tidings.clock.now_us()
    conn.execute(insert(webhook_deliveries).values(
        user_id=job.args["user"], event_id=event.id, url=job.args["url"][:1024], status=status,
        attempt=attempt, error=error, at=now))
    if error is None:
        return None
    # Retried here rather than by raising, so the attempt's log row is kept.
    if attempt >= tidings.config.job_max_attempts:
        conn.execute(insert(job_failures).values(
            job_id=job.id, func=job.func, args=json.dumps(job.args), error=error,
            attempt=attempt, final=True, failed_at=now))
        return None
    delay = min(tidings.config.job_backoff_seconds * 2 ** (attempt - 1), 3600.0)
    return [JobSpec(WEBHOOK, {**job.args, "attempt": attempt + 1}, unique_key=job.unique_key,
                    priority=job.priority, run_after=now + int(delay * 1_000_000))]
