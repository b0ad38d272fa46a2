"""Inbox rows: batched idempotent writes with bundling, reads of base rows, read state, removal.

Every list and count reads base rows only (one per display group) through an index: no
GROUP BY, no DISTINCT, no COUNT(*) over an inbox.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    delete,
    false,
    func,
    or_,
    select,
    true,
    tuple_,
    update,
)

from tidings.domain.bundling import UNREAD_CAP, display_hash
from tidings.domain.readstate import Markers
from tidings.store.sql.database import Database
from tidings.store.sql.events import StoredEvent
from tidings.store.sql.schema import events, notifications, read_markers, timelines

n = notifications.c
ACTOR_SCAN = 500  # Echo's LIMIT for "X and N others": enough to find 99+ distinct actors


@dataclass(frozen=True)
class Filters:
    types: tuple[str, ...] | None = None
    category: str | None = None
    section: str | None = None
    unread: bool | None = None


@dataclass(frozen=True)
class InboxRow:
    event_id: int
    user_id: str
    created_at: int
    fresh_at: int
    type: str
    category: str
    section: str
    actor: str | None
    object: str | None
    bundle_hash: str
    display_hash: str
    read_at: int | None
    payload: str


@dataclass(frozen=True)
class GroupInfo:
    count: int
    actors: list[str]
    distinct_actors: int


# -- read markers ----------------------------------------------------------------------------

def load_markers(conn: Connection, user: str) -> Markers:
    rows = conn.execute(
        select(read_markers.c.scope, read_markers.c.until_at).where(read_markers.c.user_id == user)
    )
    return Markers.from_rows({r.scope: r.until_at for r in rows})


def load_markers_many(conn: Connection, users: Sequence[str]) -> dict[str, Markers]:
    found: dict[str, dict[str, int]] = {}
    for start in range(0, len(users), 5000):
        part = list(users[start:start + 5000])
        rows = conn.execute(
            select(read_markers.c.user_id, read_markers.c.scope, read_markers.c.until_at)
            .where(read_markers.c.user_id.in_(part))
        )
        for r in rows:
            found.setdefault(r.user_id, {})[r.scope] = r.until_at
    return {user: Markers.from_rows(rows) for user, rows in found.items()}


def set_marker(db: Database, conn: Connection, user: str, scope: str, until: int) -> None:
    """One narrow write: move a watermark forward (never back)."""
    current = conn.execute(
        select(read_markers.c.until_at)
        .where(read_markers.c.user_id == user, read_markers.c.scope == scope)
    ).scalar()
    if current is None:
        conn.execute(db.upsert(read_markers, ["user_id", "scope"],
                               {"user_id": user, "scope": scope, "until_at": until},
                               ["until_at"]))
    elif current < until:
        conn.execute(update(read_markers)
                     .where(read_markers.c.user_id == user, read_markers.c.scope == scope)
                     .values(until_at=until))


def unread_condition(markers: Markers) -> ColumnElement[bool]:
    """SQL for 'unread' under these watermarks.

    Index-friendly on (user, base, read_at, fresh_at): equality, equality, IS NULL, range.
    """
    conditions: list[ColumnElement[bool]] = [n.read_at.is_(None), n.fresh_at > markers.all]
    for (kind, value), until in markers.effective_scoped().items():
        conditions.append(or_(n[kind] != value, n.fresh_at > until))
    return and_(*conditions)


def _filter_conditions(user: str, filters: Filters, markers: Markers) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [n.user_id == user, n.bundle_base == true()]
    if filters.types:
        conditions.append(n.type.in_(list(filters.types)))
    if filters.category is not None:
        conditions.append(n.category == filters.category)
    if filters.section is not None:
        conditions.append(n.section == filters.section)
    if filters.unread is True:
        conditions.append(unread_condition(markers))
    elif filters.unread is False:
        conditions.append(~unread_condition(markers))
    return conditions


# -- writes ----------------------------------------------------------------------------------

def deliver(db: Database, conn: Connection, event: StoredEvent, *, category: str, section: str,
            bundle: str, users: Iterable[str], now: int) -> list[str]:
    """Write one notification per user for ``event``; return the users newly notified.

    Idempotent: users who already have this event are skipped. A bundled notification joins
    the newest display group of its bundle hash while that group is unread, else starts one.
    """
    candidates = sorted(set(users))
    if not candidates:
        return []
    existing: set[str] = set()
    bases: dict[str, Any] = {}
    for start in range(0, len(candidates), 5000):
        part = candidates[start:start + 5000]
        if bundle != "none":
            query = (
                select(n.user_id, n.display_hash, n.created_at, n.fresh_at, n.read_at, n.type,
                       n.category, n.section, n.event_id)
                .where(n.user_id.in_(part), n.bundle_hash == hash_of(event, bundle),
                       n.bundle_base == true())
                .order_by(n.user_id)
            )
            if db.skip_locked:
                query = query.with_for_update()
            for row in conn.execute(query):
                newest = bases.get(row.user_id)
                if newest is None or (row.created_at, row.event_id) > (
                        newest.created_at, newest.event_id):
                    bases[row.user_id] = row
        # The chunk's ids go in as literals: a prepared statement's generic plan on PostgreSQL
        # filters rows with an unhashed IN list, which made each chunk of a big fan-out cost
        # (rows of the event so far) x (chunk size) comparisons.
        existing.update(r[0] for r in conn.execute(
            select(n.user_id).where(n.event_id == event.id, n.user_id.in_(
                bindparam("chunk_users", part, expanding=True, literal_execute=True)))))
    fresh = [u for u in candidates if u not in existing]
    if not fresh:
        return []
    bhash = hash_of(event, bundle)
    markers = load_markers_many(conn, [u for u in fresh if u in bases]) if bases else {}
    rows: list[dict[str, Any]] = []
    demote: list[tuple[str, str]] = []
    for user in fresh:
        group = display_hash(bhash, event.id)
        base = bases.get(user)
        if base is not None:
            user_markers = markers.get(user, Markers())
            if user_markers.is_unread(base.read_at, base.fresh_at, base.type, base.category,
                                      base.section):
                group = base.display_hash
                demote.append((user, base.display_hash))
        rows.append({
            "user_id": user, "event_id": event.id, "created_at": now, "fresh_at": now,
            "type": event.type, "category": category, "section": section,
            "actor": event.actor, "object": event.object, "bundle_hash": bhash,
            "display_hash": group, "bundle_base": True, "read_at": None,
        })
    for start in range(0, len(demote), 500):
        conn.execute(
            update(notifications)
            .where(tuple_(n.user_id, n.display_hash).in_(demote[start:start + 500]),
                   n.bundle_base == true())
            .values(bundle_base=False)
        )
    db.insert_many(conn, notifications, rows, ignore=True)
    return [r["user_id"] for r in rows]


def hash_of(event: StoredEvent, bundle: str) -> str:
    from tidings.domain.bundling import bundle_hash

    return bundle_hash(bundle, event.type, event.actor, event.object, event.id)


def remove(conn: Connection, doomed: Sequence[Any]) -> int:
    """Delete notification rows (user_id, event_id, display_hash, bundle_base) and move each
    emptied base to its group's next newest member. Returns rows deleted."""
    removed = 0
    keys = [(r.user_id, r.event_id) for r in doomed]
    for start in range(0, len(keys), 500):
        result = conn.execute(
            delete(notifications).where(tuple_(n.user_id, n.event_id).in_(keys[start:start + 500]))
        )
        removed += max(result.rowcount, 0)
    orphaned = {(r.user_id, r.display_hash) for r in doomed if r.bundle_base}
    for user, group in sorted(orphaned):
        newest = conn.execute(
            select(n.event_id).where(n.user_id == user, n.display_hash == group)
            .order_by(n.created_at.desc(), n.event_id.desc()).limit(1)
        ).first()
        if newest is not None:
            conn.execute(update(notifications)
                         .where(n.user_id == user, n.event_id == newest.event_id)
                         .values(bundle_base=True))
    return removed


def rows_for_events(conn: Connection, event_ids: Sequence[int]) -> list[Any]:
    if not event_ids:
        return []
    return list(conn.execute(
        select(n.user_id, n.event_id, n.display_hash, n.bundle_base)
        .where(n.event_id.in_(list(event_ids)))
    ))


def trim_user(conn: Connection, user: str, cap: int, batch: int = 5000) -> int:
    """Delete a user's oldest notifications beyond ``cap``; return rows deleted."""
    boundary = conn.execute(
        select(n.event_id).where(n.user_id == user)
        .order_by(n.event_id.desc()).limit(1).offset(cap)
    ).scalar()
    if boundary is None:
        return 0
    doomed = list(conn.execute(
        select(n.user_id, n.event_id, n.display_hash, n.bundle_base)
        .where(n.user_id == user, n.event_id <= boundary)
        .order_by(n.event_id).limit(batch)
    ))
    return remove(conn, doomed)


def push_timeline(db: Database, conn: Connection, event_id: int, users: Sequence[str],
                  now: int) -> None:
    """Write the event into these followers' timelines (the push model), idempotently."""
    if users:
        db.insert_many(conn, timelines, [
            {"user_id": user, "event_id": event_id, "created_at": now} for user in users
        ], ignore=True)


def trim_timeline(conn: Connection, user: str, cap: int) -> int:
    boundary = conn.execute(
        select(timelines.c.event_id).where(timelines.c.user_id == user)
        .order_by(timelines.c.event_id.desc()).limit(1).offset(cap)
    ).scalar()
    if boundary is None:
        return 0
    result = conn.execute(delete(timelines).where(
        timelines.c.user_id == user, timelines.c.event_id <= boundary))
    return max(result.rowcount, 0)


def read_timeline(conn: Connection, user: str, *, limit: int,
                  before: int | None) -> list[Any]:
    """Newest first, keyset-paged by event id, joined to the events still standing."""
    query = (
        select(events.c.id, events.c.type, events.c.actor, events.c.object, events.c.payload,
               events.c.created_at)
        .join(timelines, timelines.c.event_id == events.c.id)
        .where(timelines.c.user_id == user, events.c.retracted_at.is_(None))
        .order_by(timelines.c.event_id.desc()).limit(limit)
    )
    if before is not None:
        query = query.where(timelines.c.event_id < before)
    return list(conn.execute(query))


# -- read state ------------------------------------------------------------------------------

def _groups_of(conn: Connection, user: str, condition: ColumnElement[bool]) -> list[str]:
    return [r[0] for r in conn.execute(
        select(n.display_hash).where(n.user_id == user, condition).distinct())]


def mark_groups(conn: Connection, user: str, groups: Sequence[str], *, read: bool,
                now: int, markers: Markers) -> int:
    """Mark every member of these display groups read (or unread); return groups changed."""
    changed = 0
    for start in range(0, len(groups), 500):
        part = list(groups[start:start + 500])
        bases = conn.execute(
            select(n.read_at, n.fresh_at, n.type, n.category, n.section)
            .where(n.user_id == user, n.display_hash.in_(part), n.bundle_base == true())
        ).all()
        changed += sum(
            1 for b in bases
            if markers.is_unread(b.read_at, b.fresh_at, b.type, b.category, b.section) != (not read)
        )
        values: dict[str, Any] = {"read_at": now} if read else {"read_at": None, "fresh_at": now}
        conn.execute(update(notifications)
                     .where(n.user_id == user, n.display_hash.in_(part)).values(**values))
    return changed


def groups_by_ids(conn: Connection, user: str, event_ids: Sequence[int]) -> list[str]:
    return _groups_of(conn, user, n.event_id.in_(list(event_ids))) if event_ids else []


def groups_by_match(conn: Connection, user: str, *, actor: str | None, type: str | None,
                    object: str | None) -> list[str]:
    conditions: list[ColumnElement[bool]] = []
    if actor is not None:
        conditions.append(n.actor == actor)
    if type is not None:
        conditions.append(n.type == type)
    if object is not None:
        conditions.append(n.object == object)
    return _groups_of(conn, user, and_(*conditions)) if conditions else []


# -- reads -----------------------------------------------------------------------------------

def list_base_rows(conn: Connection, user: str, filters: Filters, markers: Markers, *,
                   limit: int, before: tuple[int, int] | None) -> list[InboxRow]:
    conditions = _filter_conditions(user, filters, markers)
    if before is not None:
        created, event_id = before
        conditions.append(or_(n.created_at < created,
                              and_(n.created_at == created, n.event_id < event_id)))
    query = (
        select(n.event_id, n.user_id, n.created_at, n.fresh_at, n.type, n.category, n.section,
               n.actor, n.object, n.bundle_hash, n.display_hash, n.read_at, events.c.payload)
        .join(events, events.c.id == n.event_id)
        .where(*conditions)
        .order_by(n.created_at.desc(), n.event_id.desc())
        .limit(limit)
    )
    return [InboxRow(**row._mapping) for row in conn.execute(query)]


def _group_members_query() -> Any:
    """The newest ``ACTOR_SCAN`` members of each of a user's display groups, in one statement
    built once (so its compiled form is cached): a window over the display index."""
    ranked = select(
        n.display_hash, n.actor, n.created_at, n.event_id,
        func.row_number().over(partition_by=n.display_hash,
                               order_by=(n.created_at.desc(), n.event_id.desc())).label("rank"),
    ).where(n.user_id == bindparam("user"),
            n.display_hash.in_(bindparam("groups", expanding=True))).subquery()
    return select(ranked.c.display_hash, ranked.c.actor, ranked.c.rank).where(
        ranked.c.rank <= ACTOR_SCAN)


GROUP_MEMBERS = _group_members_query()


def group_info(conn: Connection, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]:
    """Member count (up to ``ACTOR_SCAN``) and newest distinct actors per display group."""
    if not groups:
        return {}
    rows = conn.execute(GROUP_MEMBERS, {"user": user, "groups": list(dict.fromkeys(groups))})
    by_group: dict[str, list[Any]] = {}
    for row in rows:
        by_group.setdefault(row.display_hash, []).append(row)
    info: dict[str, GroupInfo] = {}
    for group, members in by_group.items():
        members.sort(key=lambda r: r.rank)
        actors: list[str] = []
        for member in members:
            if member.actor is not None and member.actor not in actors:
                actors.append(member.actor)
        info[group] = GroupInfo(count=len(members), actors=actors, distinct_actors=len(actors))
    return info


def unread_count(conn: Connection, user: str, filters: Filters, markers: Markers) -> int:
    """Unread display groups, counted with LIMIT 100 (never a full COUNT(*))."""
    conditions = _filter_conditions(user, Filters(filters.types, filters.category,
                                                  filters.section, True), markers)
    capped = select(n.event_id).where(*conditions).limit(UNREAD_CAP).subquery()
    return int(conn.execute(select(func.count()).select_from(capped)).scalar_one())


__all__ = ["Filters", "GroupInfo", "InboxRow", "deliver", "false", "remove"]
