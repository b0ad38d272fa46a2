"""``InboxStore`` on Redis: one Lua script per user and operation (``lua/``), reads at once,
writes held in the unit's :class:`WriteBuffer` and sent just before its SQL commit.

Event payloads stay in SQL (the source of truth): a page's rows come from Redis in one
script, their payloads from the events table by primary key (``payloads``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from tidings.domain.bundling import ACTOR_SCAN, UNREAD_CAP, display_hash
from tidings.domain.flags import SAVED
from tidings.domain.readstate import Markers
from tidings.domain.views import (
    BundleBase,
    Delivery,
    Filters,
    GroupInfo,
    InboxRow,
    NewNotification,
    NotificationKey,
    PageView,
    ReadState,
)
from tidings.store.redis import holders
from tidings.store.redis.client import Redis
from tidings.store.redis.keys import Keys, opt
from tidings.store.redis.markers import MarkerCopy, PositionCopy, RedisMarkers
from tidings.store.redis.queries import fields_arg, markers_of, own_count_query, query
from tidings.store.redis.rows import Row, groups_of, rows_of
from tidings.store.redis.writes import CLEANUP, INDEX, WriteBuffer

Payloads = Callable[[Sequence[int]], dict[int, str]]
# registers users an insert writes to, with the date of their row (the SQL graph's users)
Register = Callable[[Sequence[tuple[str, int]]], None]
BADGE = frozenset(Filters(unread=u) for u in (None, True, False))  # counts badge.lua answers


def _listed(user: str, r: Row, payload: str) -> InboxRow:
    """A row a script returned as a list reads it, with its event's payload."""
    return InboxRow(event_id=r.id, user_id=user, created_at=r.created, fresh_at=r.fresh,
                    type=r.type, category=r.category, section=r.section, actor=r.actor,
                    object=r.object, bundle_hash=r.bundle, display_hash=r.display,
                    read_at=r.read_at, payload=payload, flags=r.flags)


class RedisInbox(RedisMarkers):
    """One user's (or many users') inbox rows and watermarks in Redis, within one unit."""

    def __init__(self, redis: Redis, buffer: WriteBuffer, payloads: Payloads,
                 copy_marker: MarkerCopy | None = None,
                 copy_position: PositionCopy | None = None,
                 register: Register | None = None,
                 compact: Callable[[int], int] | None = None) -> None:
        self.redis = redis
        self.keys = Keys(redis.prefix)
        self.buffer = buffer
        self.payloads = payloads
        self.copy_marker = copy_marker
        self.copy_position = copy_position
        self.register = register
        self.compact = compact  # the journal's compaction, in the unit (FeedRecords)
        # rows this unit's buffer will write, per user: (created, id), for the cap's check
        self.pending: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.unindexed: set[int] = set()  # events whose index the fan-out completes later
        self.trimmed: Counter[str] = Counter()  # rows trim.lua will remove, per user

    def _rows(self, user: str, name: str, args: Sequence[Any]) -> list[Row]:
        return [Row(r) for r in self.redis.run(name, self.keys.user(user), args)]

    def _rows_many(self, name: str, calls: Sequence[tuple[str, Sequence[Any]]]
                   ) -> list[list[Row]]:
        results = self.redis.pipeline(
            [(name, self.keys.user(user), args) for user, args in calls], name)
        return [[Row(r) for r in result] for result in results]

    def position_of(self, user: str, event_id: int) -> tuple[int, int] | None:
        rows = self._rows(user, "rows", [event_id])
        return (rows[0].created, event_id) if rows else None

    def keys_of(self, user: str, event_ids: Sequence[int]) -> list[NotificationKey]:
        if not event_ids:
            return []
        return sorted((r.key(user) for r in self._rows(user, "rows", sorted(set(event_ids)))),
                      key=lambda k: k.event_id)

    # -- writes -----------------------------------------------------------------------------

    def bundle_bases(self, users: Sequence[str], bundle_hash: str, *,
                     before: tuple[int, int] | None = None) -> dict[str, BundleBase]:
        # each delivery decides atomically per user (deliver.lua): no lock to take
        args = [bundle_hash, *before] if before is not None else [bundle_hash]
        found = self._rows_many("bundle_base", [(u, args) for u in users])
        return {user: BundleBase(user_id=user, event_id=r.id, display_hash=r.display,
                                 created_at=r.created, fresh_at=r.fresh, read_at=r.read_at,
                                 type=r.type, category=r.category, section=r.section,
                                 flags=r.flags)
                for user, rows in zip(users, found, strict=True) for r in rows[:1]}

    def bundle_bases_many(self, pairs: Sequence[tuple[str, str]]
                          ) -> dict[tuple[str, str], BundleBase]:
        wanted = sorted(set(pairs))
        found = self._rows_many("bundle_base", [(u, [b]) for u, b in wanted])
        return {(user, bundle): BundleBase(
                    user_id=user, event_id=r.id, display_hash=r.display, created_at=r.created,
                    fresh_at=r.fresh, read_at=r.read_at, type=r.type, category=r.category,
                    section=r.section, flags=r.flags)
                for (user, bundle), rows in zip(wanted, found, strict=True) for r in rows[:1]}

    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]:
        (writers,) = holders.writers_of(self.redis, self.keys, [(event_id, users)])
        return {u for u, w in zip(users, writers, strict=True) if w is not None}

    def held(self, event_ids: Sequence[int]) -> set[int]:
        return holders.held(self.redis, self.keys, event_ids)

    def unreachable(self, users: Sequence[str]) -> set[str]:
        return self.redis.unreachable(users, self.keys.user)

    def index_unreachable(self, event_id: int) -> bool:
        return bool(self.redis.unreachable([self.keys.recipients(event_id)], str))

    def index_later(self, event_id: int) -> None:
        self.unindexed.add(event_id)

    def index(self, event_id: int, users: Sequence[str]) -> None:
        self._index(event_id, users)

    def _index(self, event_id: int, users: Sequence[str]) -> None:
        if users and event_id not in self.unindexed:
            self.buffer.command("SADD", [self.keys.recipients(event_id), *users], phase=INDEX)

    def insert(self, rows: Sequence[NewNotification]) -> None:
        by_user: dict[str, list[NewNotification]] = defaultdict(list)
        by_event: dict[int, list[str]] = defaultdict(list)
        for r in rows:
            by_user[r.user_id].append(r)
            by_event[r.event_id].append(r.user_id)
        for event_id, users in by_event.items():
            self._index(event_id, users)
        if self.register is not None:
            self.register([(r.user_id, r.created_at) for r in rows])
        for user, mine in by_user.items():
            self.pending[user] += [(r.created_at, r.event_id) for r in mine]
            args: list[Any] = []
            for r in mine:
                args += [r.event_id, r.created_at, r.type, r.category, r.section, opt(r.actor),
                         opt(r.object), r.bundle_hash, r.display_hash, fields_arg(r.fields),
                         r.flags]
            self.buffer.script("insert", self.keys.user(user), args, user=user)

    def demote(self, groups: Sequence[tuple[str, str]]) -> None:
        by_user: dict[str, list[str]] = defaultdict(list)
        for user, group in groups:
            by_user[user].append(group)
        for user, mine in by_user.items():
            self.buffer.script("demote", self.keys.user(user), mine, user=user)

    def deliver_many(self, items: Sequence[tuple[Delivery, Sequence[str]]]) -> list[list[str]]:
        """Who holds each event read for all the items in one pipeline, the users written to
        registered at once; each event's scripts buffered in order (an event given twice:
        its users once, as the unit's writes are not read back before it ends)."""
        given: set[tuple[int, str]] = set()
        wanted: list[tuple[Delivery, list[str]]] = []
        for d, users in items:
            wanted.append((d, sorted({u for u in users if (d.event_id, u) not in given})))
            given.update((d.event_id, u) for u in users)
        found = holders.writers_of(self.redis, self.keys, [(d.event_id, c) for d, c in wanted])
        registered: list[tuple[str, int]] = []
        results = [self._deliver(d, c, w, registered)
                   for (d, c), w in zip(wanted, found, strict=True)]
        if registered and self.register is not None:
            self.register(registered)
        return results

    def _deliver(self, d: Delivery, candidates: list[str], writers: list[str | None],
                 registered: list[tuple[str, int]]) -> list[str]:
        fresh = [u for u, w in zip(candidates, writers, strict=True) if w is None]
        again = {u for u, w in zip(candidates, writers, strict=True)
                 if w is not None and d.writer and w == d.writer}
        own = display_hash(d.bundle_hash, d.event_id)
        self._index(d.event_id, fresh)
        args = [d.event_id, d.created_at, d.type, d.category, d.section, opt(d.actor),
                opt(d.object), d.bundle_hash, "1" if d.bundled else "0", d.writer, own,
                "1" if d.backfill else "0", fields_arg(d.fields), d.delivered_at]
        registered += [(u, d.created_at) for u in fresh]
        prefixes = [self.keys.user(u) for u in fresh]
        reasons = d.reasons
        for group in self.redis.by_node(prefixes):  # one script call per node
            # then each user's first flags (the bits of why it reached them), in their order
            self.buffer.script_users("deliver", tuple(prefixes[i] for i in group),
                                     [*args, *(reasons.get(fresh[i], 0) for i in group)],
                                     [fresh[i] for i in group])
        for user in fresh:
            self.pending[user].append((d.created_at, d.event_id))
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
        if self.buffer.writable:  # entries a trim left (see trim) go
            for user, rows in zip(users, found, strict=True):
                coming = {e for _, e in self.pending.get(user, ())}
                for event_id in set(by_user[user]).difference([r.id for r in rows], coming):
                    self.buffer.command("SREM", [self.keys.recipients(event_id), user],
                                        phase=CLEANUP)
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
        for event_id, gone in by_event.items():
            self.buffer.command("SREM", [self.keys.recipients(event_id), *gone],
                                phase=CLEANUP)
        return removed

    def _sizes(self, users: Sequence[str]) -> list[int]:
        """Rows per user, with those this unit is about to write."""
        stored = self.redis.pipeline([("", "ZCARD", [self.keys.user(u) + ":ids"])
                                      for u in users], "sizes")
        return [int(n) + len(self.pending.get(u, ())) - self.trimmed.get(u, 0)
                for u, n in zip(users, stored, strict=True)]

    def hold(self, users: Sequence[str]) -> None:
        return None  # each user's writes are one atomic script: no lock is held across them

    def over_cap(self, users: Sequence[str], cap: int) -> list[str]:
        wanted = sorted(set(users))
        return [u for u, n in zip(wanted, self._sizes(wanted), strict=True) if n > cap]

    def trim(self, user: str, cap: int) -> int:
        """The oldest rows by (created, id) beyond the cap go. Where this unit has rows of the
        user still to write, their dates are decided as they are written (a joined row moves
        past its bundle's newest base), so the trim is a script that runs after them
        (``trim.lua``) and the count is what it will remove; the holders' index keeps those
        rows' entries, which :meth:`keys_for_events` drops where it finds no row. So is it
        where the user has saved rows, which go last (:func:`tidings.domain.flags.beyond_cap`).
        Otherwise the oldest rows are read and removed with their entries."""
        (size,) = self._sizes([user])
        extra = size - cap
        if extra <= 0:
            return 0
        (saved,) = self.redis.pipeline(
            [("", "ZCARD", [self.keys.user(user) + ":saved"])], "saved")
        if self.pending.get(user) or int(saved):
            self.buffer.script("trim", self.keys.user(user), [cap], user=user)
            self.trimmed[user] += extra
            return extra
        flat = self.redis.run("oldest", self.keys.user(user), [extra])
        # members carry the id after a length letter (common.lua's enc), scores the date
        return self.remove([NotificationKey(user, int(str(flat[i])[1:]), "", False)
                            for i in range(0, len(flat), 2)])

    def forget_bundle_locks(self, before: int, limit: int) -> int:
        return 0  # deliveries decide in one atomic script per user: no lock state

    def compact_history(self, now: int) -> int:
        return self.compact(now) if self.compact is not None else 0

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

    def set_flags(self, user: str, groups: Sequence[str], *, on: int = 0, off: int = 0,
                  snoozed_until: int | None = None) -> int:
        if not groups:
            return 0
        groups = list(dict.fromkeys(groups))
        changed, *_ = self.redis.run("triaged", self.keys.user(user), [on, off, *groups])
        until = "" if snoozed_until is None else snoozed_until
        self.buffer.script("flags", self.keys.user(user), [on, off, until, *groups], user=user)
        return int(changed)

    def snoozes(self, user: str, groups: Sequence[str]) -> dict[str, int]:
        if not groups:
            return {}
        _, *flat = self.redis.run("triaged", self.keys.user(user),
                                  [0, 0, *dict.fromkeys(groups)])
        return {str(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}

    def saved(self, keys: Sequence[NotificationKey]) -> list[NotificationKey]:
        by_user: dict[str, list[int]] = defaultdict(list)
        for k in keys:
            by_user[k.user_id].append(k.event_id)
        users = sorted(by_user)
        found = self._rows_many("rows", [(u, sorted(set(by_user[u]))) for u in users])
        kept = {(user, r.id) for user, rows in zip(users, found, strict=True) for r in rows
                if r.flags & SAVED}
        return [k for k in keys if (k.user_id, k.event_id) in kept]

    def read_states(self, user: str, event_ids: Sequence[int]) -> list[ReadState]:
        if not event_ids:
            return []
        return [ReadState(event_id=r.id, created_at=r.created, read_at=r.read_at,
                          fresh_at=r.fresh, type=r.type, category=r.category,
                          section=r.section)
                for r in self._rows(user, "rows", event_ids)]

    # -- reads ------------------------------------------------------------------------------

    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]:
        return self._page_from(user, filters, markers, limit=limit, before=before)

    def _page_from(self, user: str, filters: Filters, markers: Markers, *, limit: int,
                   before: tuple[int, int] | None, first: list[Row] | None = None
                   ) -> list[InboxRow]:
        """The page; ``first``: its first batch of rows, when already read (view.lua)."""
        out: list[InboxRow] = []
        cursor = before
        while len(out) < limit:
            want = limit - len(out)
            if first is not None:
                rows, first = first, None
            else:
                extra: dict[str, Any] = {"limit": want}
                if cursor is not None:
                    extra.update(before_c=str(cursor[0]), before_id=str(cursor[1]))
                rows = rows_of(self.redis.run("page", self.keys.user(user),
                                              [query(filters, markers, **extra)]))
            payloads = self.payloads([r.id for r in rows]) if rows else {}
            # a row whose event is gone (deleted, not yet removed from inboxes) is not listed
            out += [_listed(user, r, payloads[r.id]) for r in rows if r.id in payloads]
            if len(rows) < want:
                break
            cursor = (rows[-1].created, rows[-1].id)
        return out

    def page_view(self, user: str, filters: Filters, *, limit: int,
                  before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
        """The watermarks, the page under them and the group info of its bundling rows in
        one script call (view.lua), where ``pageview.page_view`` reads them in three. The
        script is told the types this process has seen bundle (``Redis.bundling``): a hint
        only, ``bundles`` decides, and a group the script did not read is read after."""
        extra: dict[str, Any] = {"limit": limit, "scan": ACTOR_SCAN}
        if before is not None:
            extra.update(before_c=str(before[0]), before_id=str(before[1]))
        if self.redis.bundling:
            extra["gtypes"] = sorted(self.redis.bundling)
        flat, raw_rows, raw_groups = self.redis.run(
            "view", self.keys.user(user), [query(filters, Markers(), **extra)])
        markers = markers_of(dict(zip(flat[::2], flat[1::2], strict=True)))
        rows = self._page_from(user, filters, markers, limit=limit, before=before,
                               first=rows_of(raw_rows))
        groups, missing = groups_of(rows, raw_groups, bundles, self.redis.bundling)
        groups.update(self.group_info(user, missing))
        return PageView(markers, rows, groups)

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

    def members(self, user: str, event_id: int, *, limit: int,
                before: tuple[int, int] | None) -> list[InboxRow] | None:
        place = [str(before[0]), str(before[1])] if before is not None else ["", ""]
        found = self.redis.run("members", self.keys.user(user), [event_id, limit, *place])
        if found is None:
            return None
        rows = rows_of(found)
        payloads = self.payloads([r.id for r in rows]) if rows else {}
        return [_listed(user, r, payloads[r.id]) for r in rows if r.id in payloads]

    def unread_counts(self, user: str, filters: Filters) -> tuple[int, int]:
        markers = self.load_markers(user)
        return (self.unread_count(user, filters, markers),
                self.unread_count(user, filters, markers, unseen=True))

    def unread_count(self, user: str, filters: Filters, markers: Markers | None = None, *,
                     unseen: bool = False) -> int:
        if markers is None:  # the script reads them: one round trip
            if filters in BADGE:  # no condition (a count is of unread rows whatever it says)
                found = int(self.redis.run("badge", self.keys.user(user),
                                           [UNREAD_CAP, "1" if unseen else "0"]))
                if found >= 0:
                    return found
            return int(self.redis.run("count", self.keys.user(user),
                                      [own_count_query(filters, unseen, UNREAD_CAP)]))
        if unseen:
            markers = markers.unseen()
        return int(self.redis.run("count", self.keys.user(user), [
            query(filters, markers, unread=None, cap=UNREAD_CAP, all_s=str(markers.all))]))
