"""Read watermarks on SQL (Gazelle's witness rows): one narrow row per (user, scope)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, or_, select, update

from tidings.domain.readstate import POSITION, Markers
from tidings.store.sql.database import Database
from tidings.store.sql.schema import notifications, read_markers

IN_LIST = 5000
m = read_markers.c
n = notifications.c


COLUMNS = (m.user_id, m.scope, m.until_at, m.position_at, m.position_id)


def _markers(rows: Sequence[Any]) -> Markers:
    position = next(((r.position_at, r.position_id) for r in rows
                     if r.scope == POSITION and r.position_at is not None), None)
    return Markers.from_rows({r.scope: r.until_at for r in rows}, position)


def load(conn: Connection, user: str) -> Markers:
    return _markers(conn.execute(select(*COLUMNS).where(m.user_id == user)).all())


def load_many(conn: Connection, users: Sequence[str]) -> dict[str, Markers]:
    found: dict[str, list[Any]] = {}
    for start in range(0, len(users), IN_LIST):
        part = list(users[start:start + IN_LIST])
        for r in conn.execute(select(*COLUMNS).where(m.user_id.in_(part))):
            found.setdefault(r.user_id, []).append(r)
    return {user: _markers(rows) for user, rows in found.items()}


def move(db: Database, conn: Connection, user: str, scope: str, until: int) -> None:
    """One narrow write: move a watermark forward (never back)."""
    current = conn.execute(select(m.until_at).where(m.user_id == user, m.scope == scope)).scalar()
    if current is None:
        conn.execute(db.upsert(read_markers, ["user_id", "scope"],
                               {"user_id": user, "scope": scope, "until_at": until},
                               ["until_at"]))
    elif current < until:
        conn.execute(update(read_markers).where(m.user_id == user, m.scope == scope)
                     .values(until_at=until))


def move_position(db: Database, conn: Connection, user: str, until: int,
                  position: tuple[int, int]) -> bool:
    """Set the read-up-to mark at ``position`` (fresh up to ``until``) if it moves forward
    (or there is none); False if it would move back (nothing is written)."""
    current = conn.execute(select(m.position_at, m.position_id).where(
        m.user_id == user, m.scope == POSITION)).first()
    if current is not None and current.position_at is not None and position < (
            current.position_at, current.position_id):
        return False
    values = {"until_at": until, "position_at": position[0], "position_id": position[1]}
    conn.execute(db.upsert(read_markers, ["user_id", "scope"],
                           {"user_id": user, "scope": POSITION, **values}, list(values)))
    return True


def unread_condition(markers: Markers) -> ColumnElement[bool]:
    """SQL for 'unread' under these watermarks.

    Index-friendly on (user, base, read_at, fresh_at): equality, equality, IS NULL, range.
    """
    conditions: list[ColumnElement[bool]] = [n.read_at.is_(None), n.fresh_at > markers.all]
    for (kind, value), until in markers.effective_scoped().items():
        conditions.append(or_(n[kind] != value, n.fresh_at > until))
    if markers.position is not None and markers.position[0] > markers.all:
        until, created_at, event_id = markers.position
        conditions.append(or_(n.fresh_at > until, n.created_at > created_at,
                              and_(n.created_at == created_at, n.event_id > event_id)))
    return and_(*conditions)
