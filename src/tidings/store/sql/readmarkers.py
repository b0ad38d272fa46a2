"""Read watermarks on SQL (Gazelle's witness rows): one narrow row per (user, scope)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, Connection, and_, or_, select, update

from tidings.domain.readstate import Markers
from tidings.store.sql.database import Database
from tidings.store.sql.schema import notifications, read_markers

IN_LIST = 5000
m = read_markers.c
n = notifications.c


def load(conn: Connection, user: str) -> Markers:
    rows = conn.execute(select(m.scope, m.until_at).where(m.user_id == user))
    return Markers.from_rows({r.scope: r.until_at for r in rows})


def load_many(conn: Connection, users: Sequence[str]) -> dict[str, Markers]:
    found: dict[str, dict[str, int]] = {}
    for start in range(0, len(users), IN_LIST):
        part = list(users[start:start + IN_LIST])
        for r in conn.execute(select(m.user_id, m.scope, m.until_at).where(m.user_id.in_(part))):
            found.setdefault(r.user_id, {})[r.scope] = r.until_at
    return {user: Markers.from_rows(rows) for user, rows in found.items()}


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


def unread_condition(markers: Markers) -> ColumnElement[bool]:
    """SQL for 'unread' under these watermarks.

    Index-friendly on (user, base, read_at, fresh_at): equality, equality, IS NULL, range.
    """
    conditions: list[ColumnElement[bool]] = [n.read_at.is_(None), n.fresh_at > markers.all]
    for (kind, value), until in markers.effective_scoped().items():
        conditions.append(or_(n[kind] != value, n.fresh_at > until))
    return and_(*conditions)
