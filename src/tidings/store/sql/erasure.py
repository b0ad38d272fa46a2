"""``Erasure`` on SQL: the rows of a person's own go by their user columns; the records that
name them among others (events' lists, delivery records, queued jobs, failures) are found
by a pattern on their text, or read through for the packed delivery records, and rewritten
by :mod:`tidings.domain.erasure`'s rules."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, delete, insert, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from tidings.domain import erasure as rules
from tidings.store.sql.core import recipients
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import (
    deliveries,
    email_batch,
    email_bounces,
    email_bundle_status,
    email_log,
    events,
    follows,
    group_members,
    inbox_open,
    job_failures,
    jobs,
    mutes,
    notifications,
    preferences,
    push_subscriptions,
    read_markers,
    subscriptions,
    timeline_sources,
    timeline_state,
    timelines,
    users,
    webhook_deliveries,
)

PAGE = 500  # rows read at once by a sweep


def _like(text: str) -> str:
    """``%text%`` with LIKE's wildcards in ``text`` escaped (escape character ``\\``); a
    user id may hold ``_``."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _quoted(user: str) -> str:
    """The pattern of ``user`` as a JSON string: their ids hold nothing JSON escapes."""
    return _like(json.dumps(user))


class SqlErasure:
    """The erasure primitives in one transaction."""

    def __init__(self, db: Database, conn: Connection) -> None:
        self.db = db
        self.conn = conn

    def authored(self, user: str, *, after_id: int, limit: int) -> list[int]:
        rows = self.conn.execute(select(events.c.id).where(
            events.c.actor == user, events.c.id > after_id).order_by(events.c.id).limit(limit))
        return [row.id for row in rows]

    def forget(self, user: str, addresses: Sequence[str]) -> dict[str, int]:
        own: list[tuple[str, Any, ColumnElement[bool]]] = [
            ("user", users, users.c.user_id == user),
            ("notification", notifications, notifications.c.user_id == user),
            ("bundle_state", inbox_open, inbox_open.c.user_id == user),
            ("read_marker", read_markers, read_markers.c.user_id == user),
            ("subscription", subscriptions, subscriptions.c.user_id == user),
            ("follow", follows, follows.c.follower == user),
            ("follower", follows, follows.c.followee == user),
            ("mute", mutes, mutes.c.user_id == user),
            ("muted_by", mutes, and_(mutes.c.kind == "actor", mutes.c.value == user)),
            ("group_membership", group_members, group_members.c.user_id == user),
            ("preferences", preferences, preferences.c.user_id == user),
            ("pending_mail", email_batch, email_batch.c.user_id == user),
            ("mail_state", email_bundle_status, email_bundle_status.c.user_id == user),
            ("mail_log", email_log, email_log.c.user_id == user),
            ("webhook_log", webhook_deliveries, webhook_deliveries.c.user_id == user),
            ("push_subscription", push_subscriptions, push_subscriptions.c.user_id == user),
            ("timeline_entry", timelines, timelines.c.user_id == user),
            ("timeline_state", timeline_state, timeline_state.c.user_id == user),
            ("timeline_source", timeline_sources, timeline_sources.c.actor == user),
        ]
        known = {a.strip().lower() for a in addresses} | {a.strip() for a in addresses}
        if known:
            own.append(("bounce", email_bounces, email_bounces.c.address.in_(sorted(known))))
        gone: dict[str, int] = {}
        for kind, table, where in own:
            count = max(self.conn.execute(delete(table).where(where)).rowcount, 0)
            if count:
                gone[kind] = gone.get(kind, 0) + count
        return gone

    def unlist(self, user: str, *, spare: int | None = None) -> dict[str, int]:
        changed = {"event_list": self._events(user), "delivery_record": self._deliveries(user),
                   "job": self._jobs(user, spare), "job_failure": self._failures(user),
                   "mail_subject": self._subjects(user)}
        return {kind: count for kind, count in changed.items() if count}

    def _events(self, user: str) -> int:
        """Other events' recipients and exclude lists without the user."""
        pattern = _quoted(user)
        changed = 0
        after = 0
        while True:
            rows = self.conn.execute(
                select(events.c.id, events.c.recipients, events.c.exclude)
                .where(events.c.id > after, or_(events.c.recipients.like(pattern, escape="\\"),
                                                events.c.exclude.like(pattern, escape="\\")))
                .order_by(events.c.id).limit(PAGE)).all()
            for row in rows:
                listed, excluded = json.loads(row.recipients), json.loads(row.exclude)
                if user in listed or user in excluded:
                    self.conn.execute(update(events).where(events.c.id == row.id).values(
                        recipients=json.dumps(rules.without(listed, user)),
                        exclude=json.dumps(rules.without(excluded, user))))
                    changed += 1
            if len(rows) < PAGE:
                return changed
            after = rows[-1].id

    def _deliveries(self, user: str) -> int:
        """Every delivery record read through (the users are packed: no pattern finds
        them), the user dropped from those that name them: rewritten under the key of their
        new first user (merged into a record already there), or deleted once empty."""
        d = deliveries.c
        changed = 0
        after: tuple[int, int] | None = None
        while True:
            query = select(d.event_id, d.chunk, d.users)
            if after is not None:
                query = query.where(or_(d.event_id > after[0],
                                        and_(d.event_id == after[0], d.chunk > after[1])))
            rows = self.conn.execute(query.order_by(d.event_id, d.chunk).limit(PAGE)).all()
            for row in rows:
                held = recipients.decode(row.users)
                if user in held:
                    self._rewrite_record(row.event_id, row.chunk, rules.without(held, user))
                    changed += 1
            if len(rows) < PAGE:
                return changed
            after = (rows[-1].event_id, rows[-1].chunk)

    def _rewrite_record(self, event_id: int, chunk: int, rest: list[str]) -> None:
        d = deliveries.c
        key = recipients.chunk_key(rest[0]) if rest else chunk
        if rest and key == chunk:
            self.conn.execute(update(deliveries).where(d.event_id == event_id, d.chunk == chunk)
                              .values(users=recipients.encode(rest)))
            return
        self.conn.execute(delete(deliveries).where(d.event_id == event_id, d.chunk == chunk))
        if not rest:
            return
        there = self.conn.execute(select(d.users).where(d.event_id == event_id,
                                                        d.chunk == key)).first()
        if there is None:
            self.conn.execute(insert(deliveries).values(event_id=event_id, chunk=key,
                                                        users=recipients.encode(rest)))
        else:
            merged = sorted(set(rest) | set(recipients.decode(there.users)))
            self.conn.execute(update(deliveries).where(d.event_id == event_id, d.chunk == key)
                              .values(users=recipients.encode(merged)))

    def _jobs(self, user: str, spare: int | None) -> int:
        """Queued jobs: one about the user goes, another's lists and key lose them."""
        j = jobs.c
        where: ColumnElement[bool] = j.args.like(_quoted(user), escape="\\")
        if spare is not None:
            where = and_(where, j.id != spare)
        changed = 0
        for row in self.conn.execute(select(j.id, j.args, j.unique_key).where(where)).all():
            before = json.loads(row.args)
            args = rules.scrub_args(before, user)
            if args == before:
                continue  # a longer id or a text that holds theirs
            if args is None:
                self.conn.execute(delete(jobs).where(j.id == row.id))
            else:
                key = rules.scrub_key(row.unique_key, args, user)
                self.conn.execute(update(jobs).where(j.id == row.id).values(
                    args=json.dumps(args, separators=(",", ":")), unique_key=key))
            changed += 1
        return changed

    def _subjects(self, user: str) -> int:
        """The subjects of mail sent to others that name the user (a title rendered from
        their event), their id replaced."""
        log = email_log.c
        changed = 0
        for row in self.conn.execute(select(log.id, log.subject).where(
                log.subject.like(_like(user), escape="\\"))).all():
            subject = rules.scrub_text(row.subject, user)
            if subject != row.subject:
                self.conn.execute(update(email_log).where(log.id == row.id)
                                  .values(subject=subject))
                changed += 1
        return changed

    def _failures(self, user: str) -> int:
        """Failure records: one of a job about the user goes, another's arguments and
        message lose them."""
        f = job_failures.c
        rows = self.conn.execute(select(f.id, f.args, f.error).where(or_(
            f.args.like(_quoted(user), escape="\\"),
            f.error.like(_like(user), escape="\\")))).all()
        changed = 0
        for row in rows:
            args = rules.scrub_args(json.loads(row.args), user)
            error = rules.scrub_text(row.error, user)
            if args is None:
                self.conn.execute(delete(job_failures).where(f.id == row.id))
            elif error != row.error or args != json.loads(row.args):
                self.conn.execute(update(job_failures).where(f.id == row.id).values(
                    args=json.dumps(args, separators=(",", ":")), error=error))
            else:
                continue
            changed += 1
        return changed
