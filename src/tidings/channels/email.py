"""Email: immediate mail with Echo's bundling windows, daily and weekly digests, a daily cap.

In fan-out (same transaction as the inbox rows), :func:`schedule` decides per user:

- ``immediate``: the first notification of a bundle is mailed at once (an ``email_send`` job).
  Later ones inside the window (default 4 h) wait in ``email_batch``; one ``email_bundle`` job at
  the window's end mails them as one ("San Francisco was linked by B and 7 others") and starts a
  new window. A window with nothing in it lets the cycle reset: the next one goes out at once.
- ``daily`` / ``weekly``: an ``email_batch`` row, and one ``email_digest`` job per user at their
  local digest hour. Rows that arrive while a digest is being sent wait for the next one.
- over the daily cap of immediate mails: the notification goes to the next daily digest.

Sending happens inside the job's transaction: if the process dies after the SMTP server took the
mail but before the commit, the job runs again and repeats that one mail (same Message-ID),
never loses it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy import Connection, delete, func, insert, select, update

from tidings.channels.mailer import Mail, SmtpMailer
from tidings.channels.preferences import Plan
from tidings.clock import from_datetime, to_datetime
from tidings.domain.bundling import OTHERS_CAP
from tidings.domain.rendering import RenderContext, render_all
from tidings.jobs.queue import Job, JobSpec
from tidings.store.sql import inbox
from tidings.store.sql.events import StoredEvent, get_event
from tidings.store.sql.schema import (
    email_batch,
    email_bundle_status,
    email_log,
    jobs,
    notifications,
    preferences,
)

if TYPE_CHECKING:
    from tidings.engine import Tidings

log = logging.getLogger("tidings.email")

SEND = "email_send"
BUNDLE = "email_bundle"
DIGEST = "email_digest"
DIGEST_LIMIT = 20
DAY_US = 86_400 * 1_000_000


@lru_cache(maxsize=1)
def _templates() -> Environment:
    return Environment(loader=PackageLoader("tidings.channels", "templates"),
                       autoescape=select_autoescape(["html"]), keep_trailing_newline=True)


# -- scheduling, inside fan-out ------------------------------------------------------------------

def schedule(tidings: Tidings, conn: Connection, event: StoredEvent, bundle_hash: str,
             bundled: bool, priority: int, plans: Mapping[str, Plan], prefs: Mapping[str, Any],
             now: int) -> None:
    """Queue mail for the users whose plan says so."""
    window = int(tidings.config.email_window_seconds * 1_000_000)
    sends: list[JobSpec] = []
    batch: list[dict[str, Any]] = []
    for user, plan in plans.items():
        if plan.email is None:
            continue
        if plan.email in ("daily", "weekly"):
            batch.append(_batch_row(user, event.id, "digest", bundle_hash, priority, now))
            sends.append(digest_spec(user, prefs.get(user, {}), now))
            continue
        if not bundled:
            sends.append(send_spec(user, event.id))
            continue
        last = conn.execute(select(email_bundle_status.c.last_email_at).where(
            email_bundle_status.c.user_id == user,
            email_bundle_status.c.bundle_hash == bundle_hash)).scalar()
        if last is None or last + window <= now:
            sends.append(send_spec(user, event.id))
            conn.execute(tidings.db.upsert(
                email_bundle_status, ["user_id", "bundle_hash"],
                {"user_id": user, "bundle_hash": bundle_hash, "last_email_at": now},
                ["last_email_at"]))
        else:
            batch.append(_batch_row(user, event.id, "bundle", bundle_hash, priority, now))
            sends.append(JobSpec(BUNDLE, {"user": user, "bundle_hash": bundle_hash},
                                 unique_key=f"email_bundle:{user}:{bundle_hash}",
                                 run_after=last + window, priority=4))
    if batch:
        tidings.db.insert_many(conn, email_batch, batch, ignore=True)
    tidings.queue.enqueue_many(conn, sends)


def _batch_row(user: str, event_id: int, kind: str, bundle_hash: str, priority: int,
               now: int) -> dict[str, Any]:
    return {"user_id": user, "event_id": event_id, "kind": kind, "bundle_hash": bundle_hash,
            "priority": priority, "created_at": now}


def send_spec(user: str, event_id: int) -> JobSpec:
    return JobSpec(SEND, {"user": user, "event_id": event_id},
                   unique_key=f"email:{event_id}:{user}"[:255], priority=3)


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


def cancel(conn: Connection, event_ids: list[int]) -> None:
    """A retraction: drop the events from pending windows and digests, cancel unsent mail."""
    if not event_ids:
        return
    conn.execute(delete(email_batch).where(email_batch.c.event_id.in_(event_ids)))
    for event_id in event_ids:
        conn.execute(delete(jobs).where(jobs.c.func == SEND,
                                        jobs.c.unique_key.like(f"email:{event_id}:%"),
                                        jobs.c.grabbed_until == 0))


# -- the jobs -------------------------------------------------------------------------------------

def run_send(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    """Mail one notification now (or, over the daily cap, keep it for the next digest)."""
    user = job.args["user"]
    event = get_event(conn, int(job.args["event_id"]))
    if event is None or event.retracted_at is not None:
        return None
    event_type = tidings.get_type(event.type)
    prefs = _prefs(conn, user)
    address = _address(tidings, conn, prefs, mandatory=event_type.mandatory)
    if address is None:
        return None
    now = tidings.clock.now_us()
    sent_today = conn.execute(select(func.count()).select_from(email_log).where(
        email_log.c.user_id == user, email_log.c.kind == "single",
        email_log.c.sent_at > now - DAY_US)).scalar_one()
    if sent_today >= tidings.config.email_daily_cap and not event_type.mandatory:
        conn.execute(tidings.db.insert_ignore(email_batch).values(
            **_batch_row(user, event.id, "digest", "", event_type.priority, now)))
        daily = {**prefs, "email": {**(prefs.get("email") or {}), "frequency": "daily"}}
        return [digest_spec(user, daily, now)]
    item = _item(tidings, event, [event.actor] if event.actor else [], 1, prefs)
    _deliver(tidings, conn, user, address, prefs, "single", f"event:{event.id}",
             subject=item["title"], intro=item["title"], items=[item], more=0)
    return None


def run_bundle(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    """A bundling window ended: mail what gathered in it as one, and start a new window."""
    user, bundle_hash = job.args["user"], job.args["bundle_hash"]
    rows = conn.execute(
        select(email_batch.c.id, email_batch.c.event_id).where(
            email_batch.c.user_id == user, email_batch.c.kind == "bundle",
            email_batch.c.bundle_hash == bundle_hash)
        .order_by(email_batch.c.event_id.desc()).limit(500)).all()
    if not rows:
        return None
    prefs = _prefs(conn, user)
    address = _address(tidings, conn, prefs)
    conn.execute(delete(email_batch).where(email_batch.c.id.in_([r.id for r in rows])))
    if address is None:
        return None
    newest = get_event(conn, rows[0].event_id)
    if newest is None:
        return None
    actors = _actors(conn, [r.event_id for r in rows])
    item = _item(tidings, newest, actors, len(rows), prefs)
    now = tidings.clock.now_us()
    _deliver(tidings, conn, user, address, prefs, "bundle",
             f"bundle:{bundle_hash}:{rows[-1].id}", subject=item["title"], intro=item["title"],
             items=[item], more=0)
    conn.execute(update(email_bundle_status).where(
        email_bundle_status.c.user_id == user,
        email_bundle_status.c.bundle_hash == bundle_hash).values(last_email_at=now))
    return None


def run_digest(tidings: Tidings, conn: Connection, job: Job) -> list[JobSpec] | None:
    """Mail a user's daily or weekly digest: bundles by priority, at most 20 listed."""
    user = job.args["user"]
    cutoff = tidings.clock.now_us()
    rows = conn.execute(
        select(email_batch.c.id, email_batch.c.event_id, email_batch.c.bundle_hash,
               email_batch.c.priority)
        .where(email_batch.c.user_id == user, email_batch.c.kind == "digest",
               email_batch.c.created_at <= cutoff)
        .order_by(email_batch.c.priority, email_batch.c.event_id.desc())).all()
    if not rows:
        return None
    conn.execute(delete(email_batch).where(email_batch.c.id.in_([r.id for r in rows])))
    prefs = _prefs(conn, user)
    address = _address(tidings, conn, prefs)
    if address is None:
        return None
    event_ids = [r.event_id for r in rows]
    if tidings.config.digest_skip_read:
        unread = _unread_events(conn, user, event_ids)
        rows = [r for r in rows if r.event_id in unread]
    groups: dict[str, list[Any]] = {}
    for row in rows:  # priority first, newest first within a priority
        key = row.bundle_hash or f"event:{row.event_id}"
        groups.setdefault(key, []).append(row)
    items = []
    for members in list(groups.values())[:DIGEST_LIMIT]:
        event = get_event(conn, members[0].event_id)
        if event is None or event.retracted_at is not None:
            continue
        actors = _actors(conn, [m.event_id for m in members])
        items.append(_item(tidings, event, actors, len(members), prefs))
    if not items:
        return None
    more = max(len(groups) - DIGEST_LIMIT, 0)
    frequency = (prefs.get("email") or {}).get("frequency", "daily")
    title = "Your weekly notifications" if frequency == "weekly" else "Your daily notifications"
    count = len(items) + more
    _deliver(tidings, conn, user, address, prefs, "digest",
             f"digest:{rows[0].id}:{rows[-1].id}",
             subject=f"{title}: {count} new", intro=f"{title}:", items=items, more=more)
    return None


# -- helpers ---------------------------------------------------------------------------------------

def _prefs(conn: Connection, user: str) -> dict[str, Any]:
    raw = conn.execute(select(preferences.c.data).where(preferences.c.user_id == user)).scalar()
    data: dict[str, Any] = json.loads(raw) if raw else {}
    return data


def _address(tidings: Tidings, conn: Connection, prefs: Mapping[str, Any], *,
             mandatory: bool = False) -> str | None:
    """Where to mail, or None: no address, unsubscribed (unless mandatory), or bounced."""
    from tidings.channels.preferences import bounced

    email = prefs.get("email") or {}
    address = email.get("address")
    if not address or (email.get("frequency") == "never" and not mandatory):
        return None
    if bounced(conn, [address]):
        return None
    return str(address)


def _actors(conn: Connection, event_ids: list[int]) -> list[str]:
    from tidings.store.sql.schema import events

    rows = conn.execute(select(events.c.actor).where(events.c.id.in_(event_ids))
                        .order_by(events.c.id.desc())).all()
    actors: list[str] = []
    for row in rows:
        if row.actor and row.actor not in actors:
            actors.append(row.actor)
    return actors


def _unread_events(conn: Connection, user: str, event_ids: list[int]) -> set[int]:
    markers = inbox.load_markers(conn, user)
    rows = conn.execute(select(notifications.c.event_id, notifications.c.read_at,
                               notifications.c.fresh_at, notifications.c.type,
                               notifications.c.category, notifications.c.section)
                        .where(notifications.c.user_id == user,
                               notifications.c.event_id.in_(event_ids))).all()
    found = {r.event_id for r in rows}
    unread = {r.event_id for r in rows
              if markers.is_unread(r.read_at, r.fresh_at, r.type, r.category, r.section)}
    # mail-only notifications (web turned off) have no inbox row: nothing was read on the web
    return unread | (set(event_ids) - found)


def _item(tidings: Tidings, event: StoredEvent, actors: list[str], count: int,
          prefs: Mapping[str, Any]) -> dict[str, Any]:
    from tidings.i18n import normalise_locale

    event_type = tidings.get_type(event.type)
    others = min(max(len(actors) - 1, 0), OTHERS_CAP)
    ctx = RenderContext(type=event.type, actor=event.actor, object=event.object,
                        payload=event.payload, actors=actors[:3], count=count, others=others)
    rendered = render_all(event_type, ctx, normalise_locale(prefs.get("locale")))
    link = rendered.link
    if link and link.startswith("/"):
        link = tidings.config.public_url + link
    return {"title": rendered.title, "body": rendered.body, "link": link}


def unsubscribe_token(secret: str, user: str) -> str:
    payload = base64.urlsafe_b64encode(user.encode()).decode().rstrip("=")
    signature = hmac.new(secret.encode(), f"unsubscribe:{user}".encode(),
                         hashlib.sha256).hexdigest()[:32]
    return f"{payload}.{signature}"


def check_unsubscribe_token(secret: str, token: str) -> str | None:
    """The user a token unsubscribes, or None if it was not signed by us."""
    payload, _, signature = token.partition(".")
    try:
        user = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    expected = unsubscribe_token(secret, user).partition(".")[2]
    return user if hmac.compare_digest(expected, signature) else None


def signing_secret(tidings: Tidings) -> str:
    secret = tidings.config.token_secret or (tidings.config.api_keys[0]
                                             if tidings.config.api_keys else None)
    if not secret:
        raise RuntimeError("mail needs TIDINGS_TOKEN_SECRET (or TIDINGS_API_KEY) to sign "
                           "its unsubscribe links")
    return secret


def mailer(tidings: Tidings) -> SmtpMailer:
    if not tidings.config.smtp_url:
        raise RuntimeError("TIDINGS_SMTP_URL is not set")
    return SmtpMailer(tidings.config.smtp_url, tidings.config.mail_from)


def _deliver(tidings: Tidings, conn: Connection, user: str, address: str,
             prefs: Mapping[str, Any], kind: str, key: str, *, subject: str, intro: str,
             items: list[dict[str, Any]], more: int) -> None:
    smtp = mailer(tidings)
    digest = hashlib.sha256(f"{user}\x00{key}".encode()).hexdigest()[:32]
    message_id = f"<{kind}.{digest}@{smtp.domain}>"
    token = unsubscribe_token(signing_secret(tidings), user)
    unsubscribe_url = f"{tidings.config.public_url}/v1/unsubscribe/{token}"
    context = {"intro": intro, "items": items, "more": more, "unsubscribe_url": unsubscribe_url,
               "inbox_url": f"{tidings.config.public_url}/#/notifications",
               "frequency": (prefs.get("email") or {}).get("frequency", "immediate")}
    env = _templates()
    mail = Mail(to=address, subject=subject, message_id=message_id,
                text=env.get_template("notification.txt").render(**context),
                html=env.get_template("notification.html").render(**context),
                headers={"List-Unsubscribe": f"<{unsubscribe_url}>",
                         "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"})
    now = tidings.clock.now_us()
    conn.execute(insert(email_log).values(message_id=message_id, user_id=user, kind=kind,
                                          address=address, subject=subject[:255], sent_at=now))
    smtp.send(mail)  # last: a failure rolls the log row back and the job is retried
    tidings.observe("emails_sent", 1)
