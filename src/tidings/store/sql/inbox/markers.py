"""Read watermarks on SQL (Gazelle's witness rows): one narrow row per (user, scope); the
unread count under them; and mark all read.

Mark all read on PostgreSQL in one statement, committed on its own: the capped count of
what it covers (under the "all" watermark, before the move), the upsert of the "all"
watermark, and the announcement to live listeners (``pg_notify``, delivered at commit), where
a unit of work takes BEGIN, the count, the upsert, COMMIT and then the announcement.

The statement moves nothing when a narrower watermark (per type, category or section) lies
beyond "all": the count it returns would not be exact, so the caller does the work as a unit.

On SQLite and MariaDB (:func:`in_one_transaction`) the same count and upsert run in one short
transaction begun, and committed, on the driver of the thread's held connection: a unit of work
(a connection checked out of the pool, SQLAlchemy's transaction and execution around each
statement) cost SQLite about 200 µs more than the statements themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
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
    text,
    true,
)
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from tidings.domain.bundling import UNREAD_CAP
from tidings.domain.flags import HIDDEN, INBOX
from tidings.domain.readstate import POSITION, Markers
from tidings.domain.views import Filters
from tidings.store.sql.core.database import Database
from tidings.store.sql.inbox import types as inboxtypes
from tidings.store.sql.inbox.states import IN_INBOX
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
    """One narrow write, one statement: move a watermark forward (never back)."""
    conn.execute(move_statement(db.backend),
                 {"user_id": user, "scope": scope, "until_at": until})


@cache
def move_statement(backend: str) -> Any:
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
        conditions.append(or_(~inboxtypes.of(kind, value), n.fresh_at > until))
    if markers.position is not None and markers.position[0] > markers.all:
        until, created_at, event_id = markers.position
        conditions.append(or_(n.fresh_at > until, n.created_at > created_at,
                              and_(n.created_at == created_at, n.event_id > event_id)))
    return and_(*conditions)


# the unread base rows' index, named to MariaDB: where one user holds most of the rows, its
# estimates took the primary key's range of the user's rows and filtered them in key order,
# oldest first, to find the unread ones (100,000 rows, 30 % read: 18.6 ms against 0.48)
UNREAD_INDEX = "ix_notifications_user_id_bundle_base_read_at_fresh_at_flags"


@cache
def unread_count_statement(types: bool, category: bool, section: bool,
                           unseen: bool = False, both: bool = False) -> Any:
    """``SELECT unread, narrower``: the capped count of unread base rows under the user's
    "all" watermark (read in the same statement), and how many narrower watermarks (per type,
    category or section) lie beyond it — when there are any, the count must be redone with
    them. ``unseen``: the seen watermark counts as an "all" one too (a badge's count).
    ``both``: ``SELECT unread, unseen, narrower``, the two counts in one statement (narrower
    judged against the "all" watermark, so zero means both counts are exact). Built once per
    filter shape, so its compiled form is cached."""
    user = bindparam("user", type_=String())

    def mark(scope: str) -> Any:
        return func.coalesce(
            select(m.until_at).where(m.user_id == user, m.scope == scope).scalar_subquery(),
            literal(0))

    def later_of_all_and_seen() -> Any:  # CASE: GREATEST is not SQLite's
        return case((mark("seen") > mark("all"), mark("seen")), else_=mark("all"))

    def unread_under(everything: Any) -> Any:
        conditions: list[ColumnElement[bool]] = [
            n.user_id == user, n.bundle_base == true(), n.read_at.is_(None), IN_INBOX,
            n.fresh_at > everything]
        if types:
            conditions.append(inboxtypes.named_param("types"))
        if category:
            conditions.append(inboxtypes.of("category", bindparam("category")))
        if section:
            conditions.append(inboxtypes.of("section", bindparam("section")))
        return (select(n.fresh_at).where(*conditions)
                .with_hint(notifications, f"FORCE INDEX ({UNREAD_INDEX})", "mysql")
                .with_hint(notifications, f"FORCE INDEX ({UNREAD_INDEX})", "mariadb"))

    def count_under(everything: Any) -> Any:
        capped = unread_under(everything).limit(UNREAD_CAP).subquery()
        return select(func.count()).select_from(capped).scalar_subquery()

    everything = later_of_all_and_seen() if unseen and not both else mark("all")
    narrower = select(func.count()).where(
        m.user_id == user, m.scope != "all", m.scope != "seen",
        m.until_at > everything).scalar_subquery()
    if both:
        # One scan for both counts: the unread rows freshest first (an index's own order,
        # backwards: PostgreSQL's of the unread base rows, or one with read_at NULL in all
        # the rows the scan reads), the first UNREAD_CAP of them. The
        # unseen ones are those fresher than the seen watermark, a prefix of that order, so
        # counting them among the first UNREAD_CAP gives their capped count exactly.
        capped = (unread_under(everything)
                  .order_by(n.fresh_at.desc())
                  .limit(UNREAD_CAP).subquery())
        fresher = func.count(case((capped.c.fresh_at > mark("seen"), literal(1))))
        return select(func.count().label("unread"), fresher.label("unseen"),
                      narrower.label("narrower")).select_from(capped)
    return select(count_under(everything).label("unread"), narrower.label("narrower"))


# PostgreSQL, no filter, both counts: the same columns in one pass over the user's watermark
# rows (each read once, where the portable form reads the "all" row twice and the narrower ones
# apart), the unread rows freshest first so the unseen ones are a prefix of the capped count
_PG_BOTH = f"""
WITH w AS (
  SELECT coalesce(max(until_at) FILTER (WHERE scope = 'all'), 0) AS all_at,
         coalesce(max(until_at) FILTER (WHERE scope = 'seen'), 0) AS seen_at,
         max(until_at) FILTER (WHERE scope <> 'all' AND scope <> 'seen') AS narrow_at
  FROM read_markers WHERE user_id = :user)
SELECT k.unread, k.unseen, CASE WHEN w.narrow_at > w.all_at THEN 1 ELSE 0 END AS narrower
FROM w CROSS JOIN LATERAL (
  SELECT count(*) AS unread, count(*) FILTER (WHERE c.fresh_at > w.seen_at) AS unseen
  FROM (SELECT n.fresh_at FROM notifications n
        WHERE n.user_id = :user AND n.bundle_base = TRUE AND n.read_at IS NULL
          AND (n.flags & {HIDDEN}) = 0 AND n.fresh_at > w.all_at
        ORDER BY n.fresh_at DESC LIMIT {UNREAD_CAP}) c) k
"""


# PostgreSQL, no filter, one count (a badge's, mark all read's): the rows are only counted,
# in no order, so the count is a plain scalar subquery under the watermark that one pass over
# the user's watermark rows gives (no lateral join, no sort key, no second count); 15-25 µs a
# count less than _PG_BOTH's form, alternately on W2's data. ``w`` is the watermarks' CTE
# (PG_MARKS), PG_COUNTED the count and whether a narrower watermark makes it inexact.
PG_MARKS = """
  SELECT {everything} AS everything,
         max(until_at) FILTER (WHERE scope <> 'all' AND scope <> 'seen') AS narrow_at
  FROM read_markers WHERE user_id = :user"""
PG_COUNTED = f"""
SELECT (SELECT count(*) FROM (SELECT 1 FROM notifications n
          WHERE n.user_id = :user AND n.bundle_base = TRUE AND n.read_at IS NULL
            AND (n.flags & {HIDDEN}) = 0 AND n.fresh_at > w.everything
          LIMIT {UNREAD_CAP}) c) AS unread,
       CASE WHEN w.narrow_at > w.everything THEN 1 ELSE 0 END AS narrower
FROM w"""
PG_ALL = "coalesce(max(until_at) FILTER (WHERE scope = 'all'), 0)"
_SEEN = "coalesce(max(until_at) FILTER (WHERE scope = 'seen'), 0)"


@cache
def count_statement(backend: str, types: bool, category: bool, section: bool,
                    unseen: bool = False, both: bool = False) -> Any:
    """:func:`unread_count_statement`'s columns, in its one-pass form on PostgreSQL when
    nothing narrows the count."""
    if backend != "postgresql" or types or category or section:
        return unread_count_statement(types, category, section, unseen, both)
    if not both:
        marks = PG_MARKS.format(everything=f"greatest({PG_ALL}, {_SEEN})" if unseen else PG_ALL)
        return text(f"WITH w AS ({marks}){PG_COUNTED}")
    return text(_PG_BOTH)


def watermarks_only(filters: Filters) -> bool:
    """Whether ``filters`` narrow only by type, category or section (and read state), in the
    inbox's state: the shapes the one-statement count takes."""
    return (filters.actor is None and filters.object is None and filters.max_id is None
            and filters.since_id is None and not filters.fields and filters.state == INBOX
            and filters.reasons is None)


def count_params(user: str, filters: Filters) -> dict[str, Any]:
    params: dict[str, Any] = {"user": user}
    if filters.types:
        params["types"] = list(filters.types)
    if filters.category is not None:
        params["category"] = filters.category
    if filters.section is not None:
        params["section"] = filters.section
    return params


# the count (PG_COUNTED, under the "all" watermark), the upsert where no narrower
# watermark makes the count inexact, and the announcement (pg_notify, delivered at commit)
_STATEMENT = f"""
WITH w AS ({PG_MARKS.format(everything=PG_ALL)}),
counted AS ({PG_COUNTED}),
moved AS (
  INSERT INTO read_markers (user_id, scope, until_at)
  SELECT :user, 'all', :now FROM counted WHERE narrower = 0
  ON CONFLICT (user_id, scope) DO UPDATE
  SET until_at = greatest(read_markers.until_at, excluded.until_at)
  RETURNING read_markers.user_id),
told AS MATERIALIZED (SELECT pg_notify(:channel, user_id) AS told FROM moved)
SELECT unread, narrower, (SELECT count(*) FROM told) AS announced FROM counted
"""
STATEMENT = text(_STATEMENT).bindparams(bindparam("now", type_=BigInteger))


def mark_all_read(db: Database, read: Callable[[], AbstractContextManager[Connection]],
                  user: str, now: int, channel: str) -> int | None:
    """The unread count the "all" watermark's move to ``now`` covered, or None (nothing
    done) when a narrower watermark makes the count inexact. ``read`` gives an autocommit
    connection (:meth:`Database.read`, or a held one)."""
    with read() as conn:  # autocommit: one statement, committed when it returns
        ((unread, narrower, _announced),) = db.fetch(conn, STATEMENT, {
            "user": user, "now": now, "channel": channel})
    return None if narrower else int(unread)


# how a write transaction begins on the held (autocommit) connection's driver: SQLite takes
# the write lock at once, as its units do (BEGIN IMMEDIATE), so the count and the upsert see
# one state
BEGIN = {"sqlite": text("BEGIN IMMEDIATE"), "mysql": text("START TRANSACTION")}


def in_one_transaction(db: Database, read: Callable[[], AbstractContextManager[Connection]],
                       user: str, now: int) -> int | None:
    """SQLite and MariaDB: what :func:`mark_all_read` does, as the count and the upsert of a
    unit of work (``count_statement``, the "all" watermark's upsert) in one
    transaction on the driver of ``read``'s connection, built once and run straight on the
    driver; None (nothing done) where a narrower watermark makes the count inexact. The
    caller announces the move once this returns."""
    count = count_statement(db.backend, False, False, False)
    with read() as conn:
        db.run(conn, BEGIN[db.backend], {})
        driver: Any = conn.connection.dbapi_connection
        committed = False
        try:
            ((unread, narrower),) = db.fetch(conn, count, {"user": user})
            if narrower:
                return None
            db.run(conn, move_statement(db.backend),
                   {"user_id": user, "scope": "all", "until_at": now})
            driver.commit()
            committed = True
        finally:
            if not committed:  # failed, or nothing to do: end it with nothing written
                with contextlib.suppress(Exception):
                    driver.rollback()
    return int(unread)
