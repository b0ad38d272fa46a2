"""Deciding, inside fan-out, which mail each user gets (Echo's bundling windows, digests).

- ``immediate``: the first notification of a bundle is mailed at once (an ``email_send`` job).
  Later ones inside the window (default 4 h) wait in the mail batch; one ``email_bundle`` job at
  the window's end mails them as one ("San Francisco was linked by B and 7 others") and starts a
  new window. A window with nothing in it lets the cycle reset: the next one goes out at once.
- ``daily`` / ``weekly``: a batch row, and one ``email_digest`` job per user at their local
  digest hour. Rows that arrive while a digest is being sent wait for the next one.
- over the daily cap of immediate mails: the notification goes to the next daily digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tidings.channels.registry import Outgoing
from tidings.clock import from_datetime, to_datetime
from tidings.domain.preferences import mail_delay
from tidings.domain.views import MailBatchRow
from tidings.jobs.context import JobContext
from tidings.jobs.model import JobSpec
from tidings.ports import Tx

SEND = "email_send"
BUNDLE = "email_bundle"
DIGEST = "email_digest"


def send_key(user: str, event_id: int) -> str:
    """The unique key of the immediate mail of one notification."""
    return f"email:{event_id}:{user}"[:255]


def send_spec(user: str, event_id: int, run_after: int | None = None) -> JobSpec:
    return JobSpec(SEND, {"user": user, "event_id": event_id},
                   unique_key=send_key(user, event_id), priority=3, run_after=run_after)


def digest_spec(user: str, prefs: Mapping[str, Any], now: int) -> JobSpec:
    return JobSpec(DIGEST, {"user": user}, unique_key=f"digest:{user}",
                   run_after=next_digest_at(prefs, now), priority=6)


def next_digest_at(prefs: Mapping[str, Any], now: int) -> int:
    """The next local digest hour (daily), or that hour on the next Monday (weekly)."""
    email = prefs.get("email") or {}
    try:
        zone = ZoneInfo(email.get("timezone") or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    hour = int(email.get("digest_hour", 8))
    local = to_datetime(now).astimezone(zone)
    candidate = local.replace(hour=hour, minute=0, second=0, microsecond=0)
    if email.get("frequency") == "weekly":
        candidate += timedelta(days=(7 - candidate.weekday()) % 7)
        while candidate <= local:
            candidate += timedelta(days=7)
    else:
        while candidate <= local:
            candidate += timedelta(days=1)
    # rebuild through the zone so a DST change keeps the wall-clock hour
    candidate = datetime(candidate.year, candidate.month, candidate.day, hour, tzinfo=zone)
    return from_datetime(candidate)


def batch_row(user: str, event_id: int, kind: str, bundle_hash: str, priority: int,
              now: int) -> MailBatchRow:
    return MailBatchRow(user_id=user, event_id=event_id, kind=kind, bundle_hash=bundle_hash,
                        priority=priority, created_at=now)


def schedule(ctx: JobContext, tx: Tx, out: Outgoing) -> None:
    """Queue mail for the users whose plan says so (no SMTP server configured: no mail)."""
    if not ctx.config.smtp_url or not any(p.email for p in out.plans.values()):
        return
    window = int(ctx.config.email_window_seconds * 1_000_000)
    bundled = out.event_type.bundle != "none"
    priority, now, event_id = out.event_type.priority, out.now, out.event.id
    sends: list[JobSpec] = []
    batch: list[MailBatchRow] = []
    for user, plan in out.plans.items():
        if plan.email is None:
            continue
        delay = mail_delay(out.prefs.get(user), out.event_type)[0]
        send_at = now + delay * 1_000_000 if delay else None  # "email after N seconds"
        if plan.email in ("daily", "weekly"):
            batch.append(batch_row(user, event_id, "digest", out.bundle_hash, priority, now))
            sends.append(digest_spec(user, out.prefs.get(user, {}), now))
            continue
        if not bundled:
            sends.append(send_spec(user, event_id, send_at))
            continue
        last = tx.mail.last_email_at(user, out.bundle_hash)
        if last is None or last + window <= now:
            sends.append(send_spec(user, event_id, send_at))
            tx.mail.set_last_email_at(user, out.bundle_hash, now)
        else:
            batch.append(batch_row(user, event_id, "bundle", out.bundle_hash, priority, now))
            sends.append(JobSpec(BUNDLE, {"user": user, "bundle_hash": out.bundle_hash},
                                 unique_key=f"email_bundle:{user}:{out.bundle_hash}",
                                 run_after=last + window, priority=4))
    tx.mail.add_batch(batch)
    tx.jobs.enqueue_many(sends)


def cancel_for(tx: Tx, user: str, event_ids: list[int]) -> None:
    """One recipient deleted these notifications: drop their pending mail of them."""
    if not event_ids:
        return
    tx.mail.cancel_events(event_ids, user=user)
    for event_id in event_ids:
        tx.jobs.cancel(SEND, send_key(user, event_id), exact=True)


def cancel(tx: Tx, event_ids: list[int]) -> None:
    """A retraction: drop the events from pending windows and digests, cancel unsent mail."""
    if not event_ids:
        return
    tx.mail.cancel_events(event_ids)
    for event_id in event_ids:
        tx.jobs.cancel(SEND, f"email:{event_id}:")
