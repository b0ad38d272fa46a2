"""Inbox rows (``InboxStore`` on SQL): batched idempotent writes with the bundling columns,
reads of base rows, read state, removal.

Every list and count reads base rows only (one per display group) through an index: no
GROUP BY, no DISTINCT, no COUNT(*) over an inbox. Which group a notification joins is decided
by the caller (``tidings.domain.bundling``); this module stores what it decided.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    delete,
    func,
    select,
    true,
    tuple_,
    update,
)

from tidings.clock import Clock
from tidings.domain.bundling import UNREAD_CAP
from tidings.domain.flags import SNOOZED, beyond_cap
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
from tidings.store import pageview, stepwise
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.hashes import column_to_sql
from tidings.store.sql.inbox import bundles, holders, states
from tidings.store.sql.inbox import cap as inboxcap
from tidings.store.sql.inbox import groups as groupsummary
from tidings.store.sql.inbox import markers as readmarkers
from tidings.store.sql.inbox import page as sql_pageview
from tidings.store.sql.inbox import types as inboxtypes
from tidings.store.sql.inbox.query import before_place, filter_conditions, match_conditions
from tidings.store.sql.inbox.states import state_condition
from tidings.store.sql.schema import event_fields, events, notifications

n = notifications.c
BATCH = 500
FLAG_BITS = 0x7FFF  # every bit of flags (a SMALLINT): a mask ANDed in keeps them positive
# a notification row's columns, each read from the NewNotification attribute named (None: the
# value given): a new row is its group's base, unread, fresh when created
_ROW: tuple[tuple[str, str | None, Any], ...] = (
    ("user_id", "user_id", None), ("event_id", "event_id", None),
    ("created_at", "created_at", None), ("fresh_at", "fresh_at", None),
    ("actor", "actor", None), ("object", "object", None),
    ("bundle_hash", "bundle_hash", None), ("display_hash", "display_hash", None),
    ("bundle_base", None, True), ("read_at", None, None), ("joined", "joined", None),
    ("group_count", None, None), ("group_actors", None, None), ("flags", "flags", None),
    ("type_id", "type", None))  # the type's name here: its id replaces it (inboxtypes)
ROW_COLUMNS = tuple(column for column, _, _ in _ROW)
ROW_SOURCES: tuple[tuple[Callable[[NewNotification], Any] | None, Any], ...] = tuple(
    (attrgetter(name) if name else None, value) for _, name, value in _ROW)
# a listed row's columns, InboxRow's fields (its type's names from the types dictionary, its
# event's payload), and what they are read from
LISTED = sql_pageview.ROW_COLUMNS
LISTED_FROM = inboxtypes.joined(notifications).join(events, events.c.id == n.event_id)
SUMMARY_AT = ROW_COLUMNS.index("group_count")  # then group_actors: groupsummary.fill's
JOINED_AT = ROW_COLUMNS.index("joined")
TYPE_AT = ROW_COLUMNS.index("type_id")
HASHES_AT = (ROW_COLUMNS.index("bundle_hash"), ROW_COLUMNS.index("display_hash"))


class _SavedAmong(Exception):
    """A trim's oldest rows hold a saved one: the trim is judged over all the user's rows."""


class SqlInbox:
    """The ``notifications`` and ``read_markers`` tables within one transaction."""

    def __init__(self, db: Database, conn: Connection, clock: Clock,
                 after_commit: Callable[[Callable[[], None]], None] | None = None) -> None:
        self.db = db
        self.conn = conn
        self.clock = clock
        # (user, bundle) pairs locked by an inbox_open row made for them, no base written yet
        self.unopened: set[tuple[str, str]] = set()
        # the ids of the types this unit writes (the dictionary's rows it adds, or changes,
        # reach the database's cache once it has committed)
        self.types = inboxtypes.TypeIds(db, conn, after_commit)

    # -- watermarks -----------------------------------------------------------------------

    def load_markers(self, user: str) -> Markers:
        return readmarkers.load(self.conn, user)

    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]:
        return readmarkers.load_many(self.conn, users)

    def set_marker(self, user: str, scope: str, until: int) -> None:
        readmarkers.move(self.db, self.conn, user, scope, until)

    def set_position(self, user: str, position: tuple[int, int], until: int) -> bool:
        return readmarkers.move_position(self.db, self.conn, user, until, position)

    def position_of(self, user: str, event_id: int) -> tuple[int, int] | None:
        row = self.conn.execute(select(n.created_at).where(
            n.user_id == user, n.event_id == event_id)).first()
        return None if row is None else (row.created_at, event_id)

    def keys_of(self, user: str, event_ids: Sequence[int]) -> list[NotificationKey]:
        if not event_ids:
            return []
        return [NotificationKey(r.user_id, r.event_id, r.display_hash, bool(r.bundle_base))
                for r in self.conn.execute(
                    select(n.user_id, n.event_id, n.display_hash, n.bundle_base)
                    .where(n.user_id == user, n.event_id.in_(list(event_ids))))]

    # -- writes -----------------------------------------------------------------------------

    def bundle_bases(self, users: Sequence[str], bundle_hash: str, *,
                     before: tuple[int, int] | None = None) -> dict[str, BundleBase]:
        if before is None:  # the newest base of each pair, as a batch reads them
            found = self.bundle_bases_many([(u, bundle_hash) for u in users])
            return {user: base for (user, _), base in found.items()}
        held, newest = self._lock([(u, bundle_hash) for u in users])
        # a bundle's newest base before the place: its newest one where that is older, else
        # the newest before it among the user's base rows (a back-fill: rare)
        bases: dict[str, BundleBase] = {}
        for (user, bundle), at in sorted(held.items()):
            if at is None:
                continue
            if at < before:
                if (user, bundle) in newest:
                    bases[user] = newest[(user, bundle)]
                continue
            base = bundles.newest_before(self.db, self.conn, user, bundle, before)
            if base is not None:
                bases[user] = base
        return bases

    def bundle_bases_many(self, pairs: Sequence[tuple[str, str]]
                          ) -> dict[tuple[str, str], BundleBase]:
        return self._lock(pairs)[1]

    def _lock(self, pairs: Sequence[tuple[str, str]]
              ) -> tuple[dict[tuple[str, str], tuple[int, int] | None],
                         dict[tuple[str, str], BundleBase]]:
        """The pairs' decider locks, their newest base positions and the bases there; a pair
        locked by a row made for it (no base) is remembered until a base is written for it."""
        held, bases = bundles.lock_pairs(self.db, self.conn, pairs)
        if self.db.backend != "sqlite":
            self.unopened.update(p for p in pairs if held.get(p) is None)
        return held, bases

    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]:
        return holders.delivered(self.db, self.conn, event_id, users)

    def held(self, event_ids: Sequence[int]) -> set[int]:
        return holders.held(self.db, self.conn, event_ids)

    def unreachable(self, users: Sequence[str]) -> set[str]:
        return set()  # one database: reachable or not as a whole

    def index_unreachable(self, event_id: int) -> bool:
        return False  # the rows are their own index

    def index_later(self, event_id: int) -> None:
        return None

    def index(self, event_id: int, users: Sequence[str]) -> None:
        return None

    def insert(self, rows: Sequence[NewNotification]) -> None:
        fields = {(r.event_id, name, value) for r in rows for name, value in r.fields}
        if fields:  # every chunk of an event carries the same rows: the first one stays
            self.db.insert_many(self.conn, event_fields, [
                {"event_id": e, "name": name, "value": value}
                for e, name, value in sorted(fields)], ignore=True)
        if not rows:
            return
        # who received each event (holders), written with the rows
        delivered = [(r.event_id, r.user_id) for r in rows]
        # the rows column by column (a column of rows that share a value costs a compare)
        columns = [list(map(get, rows)) if get else [v] * len(rows) for get, v in ROW_SOURCES]
        kinds = {r.type: r for r in rows}  # a row of each type: its category and section
        ids = self.types.ids((r.type, r.category, r.section) for r in kinds.values())
        columns[TYPE_AT] = [ids[name] for name in columns[TYPE_AT]]
        if any(columns[JOINED_AT]):  # the summaries of the groups joined
            columns[SUMMARY_AT:SUMMARY_AT + 2] = groupsummary.fill(self.db, self.conn, rows)
        # the bundles whose newest base a new row becomes (inbox_open), written with the rows
        opened = bundles.newest_positions(rows)
        self.unopened.difference_update(opened)
        if self.db.backend == "postgresql":  # rows, records, users, opened bundles at once
            for at in HASHES_AT:  # JSON arrays: past the columns' own conversion
                columns[at] = column_to_sql(columns[at])
            inboxcap.insert_and_register(
                self.db, self.conn, ROW_COLUMNS, columns, holders.records_of(delivered),
                bundles.OPEN if opened else None,
                bundles.open_params(opened) if opened else None)
            return
        holders.record(self.db, self.conn, delivered)
        values = [dict(zip(ROW_COLUMNS, row, strict=True)) for row in zip(*columns, strict=True)]
        self.db.insert_many(self.conn, notifications, values, ignore=True)
        inboxcap.register(self.db, self.conn, [(r.user_id, r.created_at) for r in rows])
        bundles.open_rows(self.db, self.conn, opened)

    def hold(self, users: Sequence[str]) -> None:
        inboxcap.hold(self.db, self.conn, users)

    def over_cap(self, users: Sequence[str], cap: int) -> list[str]:
        return inboxcap.over_cap(self.conn, users, cap)

    def deliver_many(self, items: Sequence[tuple[Delivery, Sequence[str]]]) -> list[list[str]]:
        # the types' ids first, before any bundle lock: a unit adding a new type holds its
        # row until it commits, and holds no other lock yet while it waits for another's
        self.types.ids((d.type, d.category, d.section) for d, users in items if users)
        written = stepwise.deliver_many(self, items)
        if self.unopened:  # locked for users who held the event already: no base written
            bundles.close_unopened(self.conn, sorted(self.unopened))
            self.unopened.clear()
        return written

    def demote(self, groups: Sequence[tuple[str, str]]) -> None:
        if self.db.backend == "postgresql":
            bundles.demote(self.db, self.conn, groups)
            return
        for start in range(0, len(groups), BATCH):
            self.conn.execute(
                update(notifications)
                .where(tuple_(n.user_id, n.display_hash).in_(list(groups[start:start + BATCH])),
                       n.bundle_base == true())
                .values(bundle_base=False, group_count=None, group_actors=None))

    # -- removal ----------------------------------------------------------------------------

    def keys_for_events(self, event_ids: Sequence[int]) -> list[NotificationKey]:
        if not event_ids:
            return []
        return holders.keys_for_events(self.db, self.conn, event_ids)

    def remove(self, keys: Sequence[NotificationKey]) -> int:
        removed = self._remove(keys)
        holders.forget(self.db, self.conn, keys)  # the records of the events it emptied
        return removed

    def _remove(self, keys: Sequence[NotificationKey]) -> int:
        """:meth:`remove` leaving the delivery records (the cap's trim: an event it takes
        from one inbox is in others)."""
        removed = 0
        pairs = [(k.user_id, k.event_id) for k in keys]
        # the bundles whose newest base may go: their inbox_open rows locked first
        held = bundles.before_removal(self.db, self.conn,
                                      [(k.user_id, k.event_id) for k in keys if k.bundle_base])
        for start in range(0, len(pairs), BATCH):
            result = self.conn.execute(delete(notifications).where(
                tuple_(n.user_id, n.event_id).in_(pairs[start:start + BATCH])))
            removed += max(result.rowcount, 0)
        orphaned = {(k.user_id, k.display_hash) for k in keys if k.bundle_base}
        for user, group in sorted(orphaned):
            newest = self.conn.execute(
                select(n.event_id).where(n.user_id == user, n.display_hash == group)
                .order_by(n.created_at.desc(), n.event_id.desc()).limit(1)).first()
            if newest is not None:
                self.conn.execute(update(notifications)
                                  .where(n.user_id == user, n.event_id == newest.event_id)
                                  .values(bundle_base=True))
        groupsummary.clear(self.db, self.conn, [(k.user_id, k.display_hash) for k in keys])
        if held:
            bundles.reopen(self.db, self.conn, held, set(pairs))
        return removed

    def forget_bundle_locks(self, before: int, limit: int) -> int:
        return 0  # the decider locks are the inbox_open rows: kept while their bundle has a base

    def compact_history(self, now: int) -> int:
        return 0  # the rows are the history: no journal of writes

    def trim(self, user: str, cap: int) -> int:
        def remove(keys: Sequence[NotificationKey]) -> int:
            if self.saved(keys):  # by primary key: the oldest rows are usually none
                raise _SavedAmong
            return self._remove(keys)

        try:
            return inboxcap.trim(self.conn, user, cap, remove)
        except _SavedAmong:  # the unsaved go first (flags.beyond_cap), over all the rows
            rows = {r.event_id: r for r in self.conn.execute(
                select(n.event_id, n.created_at, n.flags, n.display_hash, n.bundle_base)
                .where(n.user_id == user))}
            doomed = beyond_cap([(r.created_at, r.event_id, r.flags) for r in rows.values()],
                                cap)
            return self._remove([NotificationKey(user, e, rows[e].display_hash,
                                                 bool(rows[e].bundle_base)) for _, e in doomed])

    # -- read state -------------------------------------------------------------------------

    def _groups_of(self, user: str, condition: ColumnElement[bool]) -> list[str]:
        return [r[0] for r in self.conn.execute(
            select(n.display_hash).where(n.user_id == user, condition).distinct())]

    def groups_by_ids(self, user: str, event_ids: Sequence[int]) -> list[str]:
        return self._groups_of(user, n.event_id.in_(list(event_ids))) if event_ids else []

    def groups_by_match(self, user: str, *, actor: str | None, type: str | None,
                        object: str | None) -> list[str]:
        conditions = match_conditions(actor, type, object)
        return self._groups_of(user, and_(*conditions)) if conditions else []

    def keys_by_match(self, user: str, *, actor: str | None, type: str | None,
                      object: str | None) -> list[NotificationKey]:
        conditions = match_conditions(actor, type, object)
        if not conditions:
            return []
        return [NotificationKey(r.user_id, r.event_id, r.display_hash, bool(r.bundle_base))
                for r in self.conn.execute(
                    select(n.user_id, n.event_id, n.display_hash, n.bundle_base)
                    .where(n.user_id == user, *conditions))]

    def mark_groups(self, user: str, groups: Sequence[str], *, read: bool, now: int,
                    markers: Markers) -> int:
        changed = 0
        for start in range(0, len(groups), BATCH):
            part = list(groups[start:start + BATCH])
            bases = self.conn.execute(
                select(n.read_at, n.fresh_at, *inboxtypes.NAMES, n.created_at, n.event_id)
                .select_from(inboxtypes.joined(notifications))
                .where(n.user_id == user, n.display_hash.in_(part), n.bundle_base == true())
            ).all()
            changed += sum(
                1 for b in bases
                if markers.is_unread(b.read_at, b.fresh_at, b.type, b.category, b.section,
                                     position=(b.created_at, b.event_id)) != (not read))
            values: dict[str, Any] = ({"read_at": now} if read
                                      else {"read_at": None, "fresh_at": now})
            self.conn.execute(update(notifications)
                              .where(n.user_id == user, n.display_hash.in_(part))
                              .values(**values))
        return changed

    def set_flags(self, user: str, groups: Sequence[str], *, on: int = 0, off: int = 0,
                  snoozed_until: int | None = None) -> int:
        changed = 0
        keep = FLAG_BITS & ~off
        for start in range(0, len(groups), BATCH):
            part = list(groups[start:start + BATCH])
            bases = self.conn.execute(select(n.flags).where(
                n.user_id == user, n.display_hash.in_(part), n.bundle_base == true())).scalars()
            changed += sum(1 for flags in bases if (flags | on) & keep != flags)
            self.conn.execute(update(notifications)
                              .where(n.user_id == user, n.display_hash.in_(part))
                              .values(flags=n.flags.op("|")(on).op("&")(keep)))
        if on & SNOOZED and snoozed_until is not None:
            states.keep(self.db, self.conn, user, groups, snoozed_until)
        elif off & SNOOZED:
            states.forget(self.conn, user, groups)
        return changed

    def snoozes(self, user: str, groups: Sequence[str]) -> dict[str, int]:
        return states.snoozes(self.conn, user, groups) if groups else {}

    def saved(self, keys: Sequence[NotificationKey]) -> list[NotificationKey]:
        pairs = [(k.user_id, k.event_id) for k in keys]
        found: set[tuple[str, int]] = set()
        for start in range(0, len(pairs), BATCH):
            found.update((r.user_id, r.event_id) for r in self.conn.execute(
                select(n.user_id, n.event_id).where(
                    tuple_(n.user_id, n.event_id).in_(pairs[start:start + BATCH]),
                    state_condition("saved"))))
        return [k for k in keys if (k.user_id, k.event_id) in found]

    def read_states(self, user: str, event_ids: Sequence[int]) -> list[ReadState]:
        if not event_ids:
            return []
        return [ReadState(**r._mapping) for r in self.conn.execute(
            select(n.event_id, n.created_at, n.read_at, n.fresh_at, *inboxtypes.NAMES)
            .select_from(inboxtypes.joined(notifications))
            .where(n.user_id == user, n.event_id.in_(list(event_ids))))]

    # -- reads ------------------------------------------------------------------------------

    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]:
        conditions = filter_conditions(user, filters, markers)
        if before is not None:
            conditions.append(before_place(before))
        query = (
            select(*LISTED).select_from(LISTED_FROM).where(*conditions)
            .order_by(n.created_at.desc(), n.event_id.desc()).limit(limit)
        )
        return [InboxRow(**row._mapping) for row in self.conn.execute(query)]

    def members(self, user: str, event_id: int, *, limit: int,
                before: tuple[int, int] | None) -> list[InboxRow] | None:
        held = self.conn.execute(select(n.display_hash).where(
            n.user_id == user, n.event_id == event_id)).first()
        if held is None:
            return None
        conditions = [n.user_id == user, n.display_hash == held.display_hash]
        if before is not None:
            conditions.append(before_place(before))
        # the group's range of the (display hash, user, created_at, event id) index, read
        # from its newest end
        query = (
            select(*LISTED).select_from(LISTED_FROM).where(*conditions)
            .order_by(n.created_at.desc(), n.event_id.desc()).limit(limit)
        )
        for name in ("mysql", "mariadb"):
            query = query.with_hint(notifications, f"FORCE INDEX ({groupsummary.GROUP_INDEX})",
                                    name)
        return [InboxRow(**row._mapping) for row in self.conn.execute(query)]

    def group_info(self, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]:
        if not groups:
            return {}
        return groupsummary.group_info(self.db, self.conn, user, groups)

    def page_view(self, user: str, filters: Filters, *, limit: int,
                  before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
        if self.db.backend != "postgresql" or filters.unread is not None:
            if filters == Filters():  # three statements built once, straight to the driver
                return sql_pageview.page_view(self.db, self.conn, user, limit=limit,
                                           before=before, bundles=bundles)
            return pageview.page_view(self, user, filters, limit=limit, before=before,
                                      bundles=bundles)
        params: dict[str, Any] = {"user": user}
        found: Sequence[Sequence[Any]]
        if filters == Filters():  # built once: straight to the driver
            if before is not None:
                params["before_at"], params["before_id"] = before
            found = sql_pageview.from_driver(self.db.fetch(
                self.conn, sql_pageview.unfiltered(before is not None, limit), params))
        else:
            conditions = filter_conditions(user, filters, Markers())  # no read-state filter
            if before is not None:
                conditions.append(before_place(before))
            found = self.conn.execute(sql_pageview.statement(conditions, limit), params).all()
        return sql_pageview.view(found, bundles, lambda: self.load_markers(user))

    def unread_count(self, user: str, filters: Filters, markers: Markers | None = None, *,
                     unseen: bool = False) -> int:
        if markers is None and readmarkers.watermarks_only(filters):
            # One statement: the count under the user's "all" watermark, and whether any
            # narrower watermark says more; only then (rare) is the exact count needed.
            unread, narrower = self._count_row(readmarkers.count_statement(
                self.db.backend, bool(filters.types), filters.category is not None,
                filters.section is not None, unseen), readmarkers.count_params(user, filters))
            if not narrower:
                return int(unread)
        return self._exact_count(user, filters, markers, unseen=unseen)

    def unread_counts(self, user: str, filters: Filters) -> tuple[int, int]:
        if readmarkers.watermarks_only(filters):  # both counts in one statement (see unread_count)
            unread, unseen, narrower = self._count_row(
                readmarkers.count_statement(
                    self.db.backend, bool(filters.types), filters.category is not None,
                    filters.section is not None, both=True),
                readmarkers.count_params(user, filters))
            if not narrower:
                return int(unread), int(unseen)
        markers = self.load_markers(user)
        return (self._exact_count(user, filters, markers),
                self._exact_count(user, filters, markers, unseen=True))

    def _count_row(self, statement: Any, params: dict[str, Any]) -> tuple[Any, ...]:
        if "types" in params:  # an expanding list: SQLAlchemy renders it per call
            return tuple(self.conn.execute(statement, params).one())
        ((*row,),) = self.db.fetch(self.conn, statement, params)
        return tuple(row)

    def _exact_count(self, user: str, filters: Filters, markers: Markers | None, *,
                     unseen: bool = False) -> int:
        if markers is None:
            markers = self.load_markers(user)
        if unseen:
            markers = markers.unseen()
        conditions = filter_conditions(user, replace(filters, unread=True), markers)
        capped = select(n.event_id).where(*conditions).limit(UNREAD_CAP).subquery()
        return int(self.conn.execute(select(func.count()).select_from(capped)).scalar_one())

