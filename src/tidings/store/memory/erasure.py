"""``Erasure`` in memory: the same sweeps as SQL's over the state's tables, each write through
the unit's journal (undone if the unit fails)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tidings.domain import erasure as rules
from tidings.store.memory.state import Journal, State


class MemoryErasure:
    """The erasure primitives of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def authored(self, user: str, *, after_id: int, limit: int) -> list[int]:
        return sorted(i for i, row in self._s.events.items()
                      if row.actor == user and i > after_id)[:limit]

    def _drop_all(self, table: dict[Any, Any], keys: Sequence[Any]) -> int:
        for key in keys:
            self._j.drop(table, key)
        return len(keys)

    def forget(self, user: str, addresses: Sequence[str]) -> dict[str, int]:
        s = self._s
        gone: dict[str, int] = {}

        def count(kind: str, number: int) -> None:
            if number:
                gone[kind] = gone.get(kind, 0) + number

        count("user", self._drop_all(s.users, [user] if user in s.users else []))
        count("notification", len(s.notes.get(user, {})))
        self._drop_all(s.notes, [user] if user in s.notes else [])
        count("read_marker", len(s.markers.get(user, {})) + (user in s.positions))
        self._drop_all(s.markers, [user] if user in s.markers else [])
        self._drop_all(s.positions, [user] if user in s.positions else [])
        mine = [sid for sid, sub in s.subscriptions.items() if sub.user == user]
        for sid in mine:
            sub = s.subscriptions[sid]
            self._j.drop(s.subscription_keys, (user, sub.type, sub.object))
            self._j.drop_in(s.subscribers, (sub.type, sub.object), user)
        count("subscription", self._drop_all(s.subscriptions, mine))
        for followee in list(s.following.get(user, {})):
            self._j.drop_in(s.followers, followee, user)
        count("follow", len(s.following.get(user, {})))
        self._drop_all(s.following, [user] if user in s.following else [])
        for follower in list(s.followers.get(user, {})):
            self._j.drop_in(s.following, follower, user)
        count("follower", len(s.followers.get(user, {})))
        self._drop_all(s.followers, [user] if user in s.followers else [])
        count("mute", len(s.mutes.get(user, {})))
        self._drop_all(s.mutes, [user] if user in s.mutes else [])
        for other, pairs in list(s.mutes.items()):
            if ("actor", user) in pairs:
                self._j.drop_in(s.mutes, other, ("actor", user))
                count("muted_by", 1)
        for members in s.groups.values():
            if user in members:
                self._j.drop(members, user)
                count("group_membership", 1)
        count("preferences", self._drop_all(s.preferences,
                                            [user] if user in s.preferences else []))
        pending = [i for i, row in s.batch.items() if row.user_id == user]
        for i in pending:
            self._j.drop(s.batch_keys, (user, s.batch[i].event_id))
        count("pending_mail", self._drop_all(s.batch, pending))
        count("mail_state", self._drop_all(s.bundle_status,
                                           [k for k in s.bundle_status if k[0] == user]))
        count("mail_log", self._drop_all(s.sent, [k for k, r in s.sent.items()
                                                  if r.user_id == user]))
        count("webhook_log", self._drop_all(s.webhooks, [k for k, r in s.webhooks.items()
                                                         if r.user_id == user]))
        pushes = [k for k, r in s.push_subscriptions.items() if r.user == user]
        self._drop_all(s.push_endpoints, [h for h, i in s.push_endpoints.items() if i in pushes])
        count("push_subscription", self._drop_all(s.push_subscriptions, pushes))
        count("timeline_entry", len(s.timelines.get(user, {})))
        self._drop_all(s.timelines, [user] if user in s.timelines else [])
        self._drop_all(s.timeline_floors, [user] if user in s.timeline_floors else [])
        count("timeline_source", self._drop_all(
            s.timeline_sources, [user] if user in s.timeline_sources else []))
        known = {a.strip().lower() for a in addresses} | {a.strip() for a in addresses}
        count("bounce", self._drop_all(s.bounces, [a for a in known if a in s.bounces]))
        return gone

    def unlist(self, user: str, *, spare: int | None = None) -> dict[str, int]:
        s = self._s
        changed: dict[str, int] = {}

        def count(kind: str) -> None:
            changed[kind] = changed.get(kind, 0) + 1

        for event_id, row in list(s.events.items()):
            if user in row.recipients or user in row.exclude:
                self._j.put(s.events, event_id, replace(
                    row, recipients=tuple(rules.without(row.recipients, user)),
                    exclude=tuple(rules.without(row.exclude, user))))
                count("event_list")
        for holders in s.holders.values():
            if user in holders:
                self._j.drop(holders, user)
                count("delivery_record")
        for job_id, job in list(s.jobs.items()):
            before = json.loads(job.args)
            args = rules.scrub_args(before, user)
            if job_id == spare or args == before:
                continue
            if job.unique_key is not None:
                self._j.drop(s.job_keys, job.unique_key)
            if args is None:
                self._j.drop(s.jobs, job_id)
            else:
                key = rules.scrub_key(job.unique_key, args, user)
                self._j.put(s.jobs, job_id, replace(
                    job, args=json.dumps(args, separators=(",", ":")), unique_key=key))
                if key is not None:
                    self._j.put(s.job_keys, key, job_id)
            count("job")
        for sent_id, sent in list(s.sent.items()):
            subject = rules.scrub_text(sent.subject, user)
            if subject != sent.subject:
                self._j.put(s.sent, sent_id, replace(sent, subject=subject))
                count("mail_subject")
        for failure_id, failure in list(s.failures.items()):
            args = rules.scrub_args(failure.args, user)
            error = rules.scrub_text(failure.error, user)
            if args is None:
                self._j.drop(s.failures, failure_id)
            elif args != failure.args or error != failure.error:
                self._j.put(s.failures, failure_id, replace(failure, args=args, error=error))
            else:
                continue
            count("job_failure")
        return changed
