"""The mail jobs, each in three steps: read what to mail (``prepare``), send it outside any
unit of work (``send``), then complete the job (``finish``).

``send`` writes the sent log in a unit of its own as soon as the SMTP server took the mail,
before anything else can fail, and sends nothing whose Message-ID the log already holds. So a
job whose later steps fail (``finish``, a store refusing a value) runs again without mailing
again. Only if the process dies, or the store goes away, between the SMTP server's answer and
that one small write does the job repeat the mail (same Message-ID): mail is never lost, and a
failure after it was sent never repeats it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidings.channels.email.compose import Outbound, compose, item, mailer
from tidings.channels.email.schedule import batch_row, digest_spec
from tidings.channels.email.smtp import one_line
from tidings.domain.bundling import bundle_hash
from tidings.domain.preferences import mail_delay
from tidings.jobs.context import Handler, JobContext, Replacements
from tidings.jobs.model import Job, JobSpec
from tidings.ports import Tx

DIGEST_LIMIT = 20
DAY_US = 86_400 * 1_000_000


@dataclass(frozen=True)
class MailPlan:
    """What ``prepare`` decided: a mail to send (or none), batch rows it used up, and what
    ``finish`` must write besides the sent log."""

    outbound: Outbound | None
    used: list[int] = field(default_factory=list)
    to_digest: tuple[int, int] | None = None  # (event id, priority) over the daily cap
    window: str | None = None  # bundle hash whose window restarts
    replacements: list[JobSpec] = field(default_factory=list)


def _prefs(tx: Tx, user: str) -> dict[str, Any]:
    return tx.settings.preferences(user) or {}


def _address(tx: Tx, prefs: Mapping[str, Any], *, mandatory: bool = False) -> str | None:
    """Where to mail, or None: no address, unsubscribed (unless mandatory), or bounced."""
    email = prefs.get("email") or {}
    address = email.get("address")
    if not address or (email.get("frequency") == "never" and not mandatory):
        return None
    if tx.settings.bounced([address]):
        return None
    return str(address)


def _unread_events(tx: Tx, user: str, event_ids: list[int]) -> set[int]:
    markers = tx.inbox.load_markers(user)
    states = tx.inbox.read_states(user, event_ids)
    found = {s.event_id for s in states}
    unread = {s.event_id for s in states
              if markers.is_unread(s.read_at, s.fresh_at, s.type, s.category, s.section,
                                   position=(s.created_at, s.event_id))}
    # mail-only notifications (web turned off) have no inbox row: nothing was read on the web
    return unread | (set(event_ids) - found)


# -- prepare ----------------------------------------------------------------------------------

def prepare_send(ctx: JobContext, tx: Tx, job: Job) -> MailPlan | None:
    """Mail one notification now (or, over the daily cap, keep it for the next digest)."""
    user = job.args["user"]
    event = tx.events.get(int(job.args["event_id"]))
    if event is None or event.retracted_at is not None:
        return None
    event_type = ctx.catalog.get(event.type)
    prefs = _prefs(tx, user)
    address = _address(tx, prefs, mandatory=event_type.mandatory)
    if address is None:
        return None
    if mail_delay(prefs, event_type)[1] and not _unread_events(tx, user, [event.id]):
        return None  # read on the web while the mail waited (email_delay_seconds)
    now = ctx.clock.now_us()
    sent_today = tx.mail.sent_count(user, "single", now - DAY_US)
    if sent_today >= ctx.config.email_daily_cap and not event_type.mandatory:
        daily = {**prefs, "email": {**(prefs.get("email") or {}), "frequency": "daily"}}
        return MailPlan(None, to_digest=(event.id, event_type.priority),
                        replacements=[digest_spec(user, daily, now)])
    one = item(ctx.config, event_type, event, [event.actor] if event.actor else [], 1, prefs)
    return MailPlan(compose(ctx.config, user, address, prefs, "single", f"event:{event.id}",
                            subject=one["title"], intro=one["title"], items=[one], more=0))


def prepare_bundle(ctx: JobContext, tx: Tx, job: Job) -> MailPlan | None:
    """A bundling window ended: mail what gathered in it as one, and start a new window."""
    user, bundle_hash = job.args["user"], job.args["bundle_hash"]
    rows = tx.mail.batch(user, "bundle", bundle_hash=bundle_hash, limit=500)
    if not rows:
        return None
    used = [r.id for r in rows]
    prefs = _prefs(tx, user)
    address = _address(tx, prefs)
    newest = tx.events.get(rows[0].event_id)
    if address is None or newest is None:
        return MailPlan(None, used=used)
    if mail_delay(prefs, ctx.catalog.get(newest.type))[1]:  # read meanwhile: not mailed
        unread = _unread_events(tx, user, [r.event_id for r in rows])
        rows = [r for r in rows if r.event_id in unread]
        newest = tx.events.get(rows[0].event_id) if rows else None
        if newest is None:
            return MailPlan(None, used=used)
    actors = tx.events.actors_of([r.event_id for r in rows])
    one = item(ctx.config, ctx.catalog.get(newest.type), newest, actors, len(rows), prefs)
    return MailPlan(compose(ctx.config, user, address, prefs, "bundle",
                            f"bundle:{bundle_hash}:{rows[-1].id}", subject=one["title"],
                            intro=one["title"], items=[one], more=0),
                    used=used, window=bundle_hash)


def prepare_digest(ctx: JobContext, tx: Tx, job: Job) -> MailPlan | None:
    """Mail a user's daily or weekly digest: bundles by priority, at most 20 listed."""
    user = job.args["user"]
    rows = tx.mail.batch(user, "digest", created_until=ctx.clock.now_us())
    if not rows:
        return None
    used = [r.id for r in rows]
    prefs = _prefs(tx, user)
    address = _address(tx, prefs)
    if address is None:
        return MailPlan(None, used=used)
    if ctx.config.digest_skip_read:
        unread = _unread_events(tx, user, [r.event_id for r in rows])
        rows = [r for r in rows if r.event_id in unread]
    groups: dict[str, list[Any]] = {}
    for row in rows:  # priority first, newest first within a priority
        groups.setdefault(row.bundle_hash or f"event:{row.event_id}", []).append(row)
    items = []
    for members in list(groups.values())[:DIGEST_LIMIT]:
        event = tx.events.get(members[0].event_id)
        if event is None or event.retracted_at is not None:
            continue
        actors = tx.events.actors_of([m.event_id for m in members])
        items.append(item(ctx.config, ctx.catalog.get(event.type), event, actors,
                          len(members), prefs))
    if not items:
        return MailPlan(None, used=used)
    more = max(len(groups) - DIGEST_LIMIT, 0)
    frequency = (prefs.get("email") or {}).get("frequency", "daily")
    title = "Your weekly notifications" if frequency == "weekly" else "Your daily notifications"
    return MailPlan(compose(ctx.config, user, address, prefs, "digest",
                            f"digest:{rows[0].id}:{rows[-1].id}",
                            subject=f"{title}: {len(items) + more} new", intro=f"{title}:",
                            items=items, more=more),
                    used=used)


# -- send and finish ------------------------------------------------------------------------

def send(ctx: JobContext, plan: MailPlan) -> None:
    """Send the mail unless an earlier run of the job did, and log it at once (see above)."""
    outbound = plan.outbound
    if outbound is None:
        return
    mail = outbound.mail
    with ctx.store.read() as tx:
        if tx.mail.was_sent(mail.message_id):
            return
    try:
        mailer(ctx.config).send(mail)
    except Exception:  # the job fails and is retried; the attempt counts as a failed delivery
        ctx.observer.delivery("email", "failed")
        raise
    # the subject as its header went out: one line, and text any store keeps
    subject = one_line(mail.subject).encode("utf-8", "replace").decode("utf-8")
    ctx.store.transact(lambda tx: tx.mail.log_sent(
        mail.message_id, outbound.user, outbound.kind, mail.to, subject, ctx.clock.now_us()))
    ctx.observer.observe("emails_sent", 1)
    ctx.observer.delivery("email", "delivered")


def finish(ctx: JobContext, tx: Tx, job: Job, plan: MailPlan, _sent: None) -> Replacements:
    now = ctx.clock.now_us()
    user = job.args["user"]
    tx.mail.delete_batch(plan.used)
    if plan.to_digest is not None:
        event_id, priority = plan.to_digest
        # the event's own hash (as for a type that never bundles): a digest item of its own
        own = bundle_hash("none", "", None, None, event_id)
        tx.mail.add_batch([batch_row(user, event_id, "digest", own, priority, now)])
    if plan.outbound is not None and plan.window is not None:
        tx.mail.set_last_email_at(user, plan.window, now)
    return plan.replacements or None


SEND_HANDLER = Handler(prepare=prepare_send, send=send, finish=finish)
BUNDLE_HANDLER = Handler(prepare=prepare_bundle, send=send, finish=finish)
DIGEST_HANDLER = Handler(prepare=prepare_digest, send=send, finish=finish)
