"""``InboxStore`` on Redis: one Lua script per user and operation (``lua/``), reads at once,
writes held in the unit's :class:`WriteBuffer` and sent just before its SQL commit.

Event payloads stay in SQL (the source of truth): a page's rows come from Redis in one
script, their payloads from the events table by primary key (``payloads``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from tidings.domain.bundling import ACTOR_SCAN, UNREAD_CAP, display_hash
from tidings.domain.readstate import Markers
from tidings.domain.views import (
    BundleBase,
    Delivery,
    Filters,
    GroupInfo,
    InboxRow,
    NewNotification,
    NotificationKey,
    ReadState,
)
from tidings.store.redis.client import Redis, guard
from tidings.store.redis.keys import Keys, opt
from tidings.store.redis.writes import CLEANUP, INDEX, WriteBuffer

TRIM_BATCH = 5000
Payloads = Callable[[Sequence[int]], dict[int, str]]
MarkerCopy = Callable[[str, str, int], None]


class Row:
    """A notification hash as a script returns it."""

    __slots__ = ("actor", "base", "bundle", "category", "created", "display", "fresh", "id",
                 "object", "read_at", "section", "type")

    def __init__(self, raw: Sequence[Any]) -> None:
        self.id = int(raw[0])
        self.created = int(raw[1])
        self.fresh = int(raw[2])
        self.type: str = raw[3]
        self.category: str = raw[4]
        self.section: str = raw[5]
        self.actor: str | None = raw[6]
        self.object: str | None = raw[7]
        self.bundle: str = raw[8]
        self.display: str = raw[9]
        self.read_at = int(raw[10]) if raw[10] is not None else None
        self.base = raw[11] == "1"

    def key(self, user: str) -> NotificationKey:
        return NotificationKey(user, self.id, self.display, self.base)


def query(filters: Filters, markers: Markers, **extra: Any) -> str:
    """A query for ``page.lua`` / ``count.lua`` as JSON (absent values left out)."""
    data: dict[str, Any] = {
        "types": list(filters.types) if filters.types else None,
        "category": filters.category, "section": filters.section, "unread": filters.unread,
        "actor": filters.actor, "object": filters.object, "max_id": filters.max_id,
        "since_id": filters.since_id, "all": markers.all,
        "scoped": [[kind, value, until] for (kind, value), until in markers.scoped.items()],
        **extra}
    return json.dumps({k: v for k, v in data.items() if v is not None})


def markers_of(raw: dict[str, str]) -> Markers:
    return Markers.from_rows({scope: int(until) for scope, until in raw.items()})


class RedisInbox:
    """One user's (or many users') inbox rows and watermarks in Redis, within one unit."""

    def __init__(self, redis: Redis, buffer: WriteBuffer, payloads: Payloads,
                 copy_marker: MarkerCopy | None = None) -> None:
        self.redis = redis
        self.keys = Keys(redis.prefix)
        self.buffer = buffer
        self.payloads = payloads
        self.copy_marker = copy_marker

    def _rows(self, user: str, name: str, args: Sequence[Any]) -> list[Row]:
        return [Row(r) for r in self.redis.run(name, self.keys.user(user), args)]

    def _rows_many(self, name: str, calls: Sequence[tuple[str, Sequence[Any]]]
                   ) -> list[list[Row]]:
        results = self.redis.pipeline(
            [(name, self.keys.user(user), args) for user, args in calls], name)
        return [[Row(r) for r in result] for result in results]

    # -- watermarks -----------------------------------------------------------------------

    def load_markers(self, user: str) -> Markers:
        with guard("markers"):
            raw = self.redis.client.hgetall(self.keys.markers(user))
        return markers_of(raw)

    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]:
        results = self.redis.pipeline(
            [("", "HGETALL", [self.keys.markers(u)]) for u in users], "markers")
        return {u: markers_of(raw) for u, raw in zip(users, results, strict=True) if raw}

    def set_marker(self, user: str, scope: str, until: int) -> None:
        if self.copy_marker is not None:
            self.copy_marker(user, scope, until)  # the durable copy, in the SQL unit
        self.buffer.script("marker", self.keys.user(user), [scope, until], user=user)

    # -- writes -----------------------------------------------------------------------------

    def bundle_bases(self, users: Sequence[str], bundle_hash: str) -> dict[str, BundleBase]:
        found = self._rows_many("bundle_base", [(u, [bundle_hash]) for u in users])
        return {user: BundleBase(user_id=user, event_id=r.id, display_hash=r.display,
                                 created_at=r.created, fresh_at=r.fresh, read_at=r.read_at,
                                 type=r.type, category=r.category, section=r.section)
                for user, rows in zip(users, found, strict=True) for r in rows[:1]}

    def _writers(self, event_id: int, users: Sequence[str]) -> list[str | None]:
        """Per user, the writer of their row of this event ('' for none), or None if absent."""
        return self.redis.pipeline(
            [("", "HGET", [self.keys.note(u, event_id), "w"]) for u in users], "delivered")

    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]:
        return {u for u, w in zip(users, self._writers(event_id, users), strict=True)
                if w is not None}

    def _index(self, event_id: int, users: Sequence[str]) -> None:
        if users:
            self.buffer.command("SADD", [self.keys.recipients(event_id), *users], phase=INDEX)

    def insert(self, rows: Sequence[NewNotification]) -> None:
        by_user: dict[str, list[NewNotification]] = defaultdict(list)
        by_event: dict[int, list[str]] = defaultdict(list)
        for r in rows:
            by_user[r.user_id].append(r)
            by_event[r.event_id].append(r.user_id)
        for event_id, users in by_event.items():
            self._index(event_id, users)
        for user, mine in by_user.items():
            args: list[Any] = []
            for r in mine:
                args += [r.event_id, r.created_at, r.type, r.category, r.section, opt(r.actor),
                         opt(r.object), r.bundle_hash, r.display_hash]
            self.buffer.script("insert", self.keys.user(user), args, user=user)

    def demote(self, groups: Sequence[tuple[str, str]]) -> None:
        by_user: dict[str, list[str]] = defaultdict(list)
        for user, group in groups:
            by_user[user].append(group)
        for user, mine in by_user.items():
            self.buffer.script("demote", self.keys.user(user), mine, user=user)

    def deliver(self, delivery: Delivery, users: Sequence[str]) -> list[str]:
        candidates = sorted(set(users))
        writers = self._writers(delivery.event_id, candidates)
        fresh = [u for u, w in zip(candidates, writers, strict=True) if w is None]
        again = {u for u, w in zip(candidates, writers, strict=True)
                 if w is not None and delivery.writer and w == delivery.writer}
        d = delivery
        own = display_hash(d.bundle_hash, d.event_id)
        self._index(d.event_id, fresh)
        args = [d.event_id, d.created_at, d.type, d.category, d.section, opt(d.actor),
                opt(d.object), d.bundle_hash, "1" if d.bundled else "0", d.writer, own]
        for user in fresh:
            self.buffer.script("deliver", self.keys.user(user), args, user=user)
        written = again.union(fresh)
        return [u for u in candidates if u in written]

    # -- removal ----------------------------------------------------------------------------

    def keys_for_events(self, event_ids: Sequence[int]) -> list[NotificationKey]:
        if not event_ids:
            return []
        members = self.redis.pipeline(
            [("", "SMEMBERS", [self.keys.recipients(e)]) for e in event_ids], "recipients")
        by_user: dict[str, list[int]] = defaultdict(list)
        for event_id, users in zip(event_ids, members, strict=True):
            for user in sorted(users):
                by_user[user].append(event_id)
        users = sorted(by_user)
        found = self._rows_many("rows", [(u, by_user[u]) for u in users])
        return [r.key(user) for user, rows in zip(users, found, strict=True) for r in rows]

    def remove(self, keys: Sequence[NotificationKey]) -> int:
        by_user: dict[str, list[int]] = defaultdict(list)
        for k in keys:
            by_user[k.user_id].append(k.event_id)
        users = sorted(by_user)
        found = self._rows_many("rows", [(u, sorted(set(by_user[u]))) for u in users])
        removed = 0
        by_event: dict[int, list[str]] = defaultdict(list)
        for user, rows in zip(users, found, strict=True):
            if not rows:
                continue
            removed += len(rows)
            self.buffer.script("remove", self.keys.user(user), [r.id for r in rows], user=user)
            for r in rows:
                by_event[r.id].append(user)
        for event_id, holders in by_event.items():
            self.buffer.command("SREM", [self.keys.recipients(event_id), *holders],
                                phase=CLEANUP)
        return removed

    def trim(self, user: str, cap: int) -> int:
        doomed = [int(i) for i in self.redis.run("oldest", self.keys.user(user),
                                                 [cap, TRIM_BATCH])]
        return self.remove([NotificationKey(user, e, "", False) for e in doomed])

    # -- read state -------------------------------------------------------------------------

    def groups_by_ids(self, user: str, event_ids: Sequence[int]) -> list[str]:
        if not event_ids:
            return []
        return list(dict.fromkeys(r.display for r in self._rows(user, "rows", event_ids)))

    def _matching(self, user: str, actor: str | None, type: str | None,
                  object: str | None) -> list[Row]:
        if actor is None and type is None and object is None:
            return []
        return self._rows(user, "match", [opt(actor), opt(type), opt(object)])

    def groups_by_match(self, user: str, *, actor: str | None, type: str | None,
                        object: str | None) -> list[str]:
        return list(dict.fromkeys(r.display for r in self._matching(user, actor, type, object)))

    def keys_by_match(self, user: str, *, actor: str | None, type: str | None,
                      object: str | None) -> list[NotificationKey]:
        return [r.key(user) for r in self._matching(user, actor, type, object)]

    def mark_groups(self, user: str, groups: Sequence[str], *, read: bool, now: int,
                    markers: Markers) -> int:
        if not groups:
            return 0
        groups = list(dict.fromkeys(groups))
        changed = int(self.redis.run("changed", self.keys.user(user),
                                     [query(Filters(), markers), "1" if read else "0", *groups]))
        self.buffer.script("mark", self.keys.user(user), ["1" if read else "0", now, *groups],
                           user=user)
        return changed

    def read_states(self, user: str, event_ids: Sequence[int]) -> list[ReadState]:
        if not event_ids:
            return []
        return [ReadState(event_id=r.id, read_at=r.read_at, fresh_at=r.fresh, type=r.type,
                          category=r.category, section=r.section)
                for r in self._rows(user, "rows", event_ids)]

    # -- reads ------------------------------------------------------------------------------

    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]:
        out: list[InboxRow] = []
        cursor = before
        while len(out) < limit:
            want = limit - len(out)
            extra: dict[str, Any] = {"limit": want}
            if cursor is not None:
                extra.update(before_c=str(cursor[0]), before_id=str(cursor[1]))
            rows = self._rows(user, "page", [query(filters, markers, **extra)])
            payloads = self.payloads([r.id for r in rows]) if rows else {}
            # a row whose event is gone (deleted, not yet removed from inboxes) is not listed
            out += [InboxRow(event_id=r.id, user_id=user, created_at=r.created,
                             fresh_at=r.fresh, type=r.type, category=r.category,
                             section=r.section, actor=r.actor, object=r.object,
                             bundle_hash=r.bundle, display_hash=r.display, read_at=r.read_at,
                             payload=payloads[r.id])
                    for r in rows if r.id in payloads]
            if len(rows) < want:
                break
            cursor = (rows[-1].created, rows[-1].id)
        return out

    def group_info(self, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]:
        if not groups:
            return {}
        unique = list(dict.fromkeys(groups))
        found = self.redis.run("groups", self.keys.user(user), [ACTOR_SCAN, *unique])
        info: dict[str, GroupInfo] = {}
        for group, (count, *actors) in zip(unique, found, strict=True):
            if count:
                info[group] = GroupInfo(count=int(count), actors=list(actors),
                                        distinct_actors=len(actors))
        return info

    def unread_count(self, user: str, filters: Filters, markers: Markers | None = None, *,
                     unseen: bool = False) -> int:
        if markers is None:
            markers = self.load_markers(user)
        if unseen:
            markers = markers.unseen()
        return int(self.redis.run("count", self.keys.user(user), [
            query(filters, markers, unread=None, cap=UNREAD_CAP, all_s=str(markers.all))]))
