"""Read watermarks on SQL (Gazelle's witness rows): one narrow row per (user, scope)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    String,
    and_,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
    true,
)
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from tidings.domain.bundling import UNREAD_CAP
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
    """One narrow write, one statement: move a watermark forward (never back)."""
    conn.execute(_move_statement(db.backend),
                 {"user_id": user, "scope": scope, "until_at": until})


@cache
def _move_statement(backend: str) -> Any:
    """An upsert that keeps the larger of the stored and the new watermark, built once."""
    values: dict[str, Any] = {"user_id": bindparam("user_id"), "scope": bindparam("scope"),
                              "until_at": bindparam("until_at")}
    if backend == "postgresql":
        pg = pg_dialect.insert(read_markers).values(**values)
        return pg.on_conflict_do_update(
            index_elements=["user_id", "scope"],
            set_={"until_at": func.greatest(m.until_at, pg.excluded.until_at)})
    if backend == "sqlite":
        lite = sqlite_dialect.insert(read_markers).values(**values)
        return lite.on_conflict_do_update(
            index_elements=["user_id", "scope"],
            set_={"until_at": func.max(m.until_at, lite.excluded.until_at)})
    my = mysql_dialect.insert(read_markers).values(**values)
    return my.on_duplicate_key_update(until_at=func.greatest(m.until_at, my.inserted.until_at))


def unread_condition(markers: Markers) -> ColumnElement[bool]:
    """SQL for 'unread' under these watermarks.

    Index-friendly on (user, base, read_at, fresh_at): equality, equality, IS NULL, range.
    """
    conditions: list[ColumnElement[bool]] = [n.read_at.is_(None), n.fresh_at > markers.all]
    for (kind, value), until in markers.effective_scoped().items():
        conditions.append(or_(n[kind] != value, n.fresh_at > until))
    return and_(*conditions)


@cache
def unread_count_statement(types: bool, category: bool, section: bool,
                           unseen: bool = False) -> Any:
    """``SELECT unread, narrower``: the capped count of unread base rows under the user's
    "all" watermark (read in the same statement), and how many narrower watermarks (per type,
    category or section) lie beyond it — when there are any, the count must be redone with
    them. ``unseen``: the seen watermark counts as an "all" one too (a badge's count). Built
    once per filter shape, so its compiled form is cached."""
    user = bindparam("user", type_=String())

    def mark(scope: str) -> Any:
        return func.coalesce(
            select(m.until_at).where(m.user_id == user, m.scope == scope).scalar_subquery(),
            literal(0))

    everything = mark("all")
    if unseen:  # the later of the two (CASE: GREATEST is not SQLite's)
        everything = case((mark("seen") > everything, mark("seen")), else_=everything)
    conditions: list[ColumnElement[bool]] = [
        n.user_id == user, n.bundle_base == true(), n.read_at.is_(None),
        n.fresh_at > everything]
    if types:
        conditions.append(n.type.in_(bindparam("types", expanding=True)))
    if category:
        conditions.append(n.category == bindparam("category"))
    if section:
        conditions.append(n.section == bindparam("section"))
    capped = select(n.event_id).where(*conditions).limit(UNREAD_CAP).subquery()
    unread = select(func.count()).select_from(capped).scalar_subquery()
    narrower = select(func.count()).where(
        m.user_id == user, m.scope.not_in(["all", "seen"]),
        m.until_at > everything).scalar_subquery()
    return select(unread.label("unread"), narrower.label("narrower"))
