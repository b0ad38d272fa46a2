"""The push mailboxes' cap, set-based: a few statements for all the mailboxes of a fan-out
chunk, whatever its size, instead of a handful per mailbox — one on PostgreSQL (``_PG_CAP``:
the steps below as data-modifying CTEs, each mailbox's own excess as its OFFSET).

A mailbox is trimmed only once its ``timeline_state.entries`` bound passes the high-water
mark (:func:`tidings.domain.timeline.high_water`: the cap and a tenth), and then back to the
cap: a write to a mailbox under the mark reads no entry of it, where an exact cap took one
index descent per mailbox on every write. Reads with the cap show the newest ``cap``
(:mod:`.reads`).

The mailboxes past the mark are grouped by their excess ``k`` (their bound minus the cap),
and:

1. a SELECT finds every mailbox's boundary, its ``k``-th oldest entry by position (created_at,
   event id: the timeline's order; a correlated ``ORDER BY created_at, event_id LIMIT 1
   OFFSET k-1``: an index scan from the oldest end per mailbox;
   MariaDB: one statement for every group, a ``UNION ALL`` part each);
2. a DELETE removes each mailbox's entries up to its boundary (SQLite: one statement the driver
   runs per mailbox; MariaDB: an OR of per-mailbox index ranges);
3. an UPDATE raises each floor to its boundary (never lowers it) and takes ``k`` off the
   bound — or, when the DELETE removed another number of rows than the boundaries imply (a
   bound that counted a duplicate push, a concurrent back-fill), sets the bounds to their
   exact counts.

On MariaDB the statements are written as the driver runs them (:func:`_cap_mysql`), not built
through SQLAlchemy: a statement of hundreds of terms was built and compiled anew for every
unit, about 4 ms of Python per message fanned out.

The result is the per-mailbox trim's: the newest ``cap`` entries kept, the floor raised past
the removed ones, so reads pull what is below it."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BindParameter,
    Connection,
    TextClause,
    bindparam,
    case,
    delete,
    func,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.exc import IntegrityError

from tidings.domain.timeline import high_water
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import timeline_state, timelines

IN_LIST = 5000  # users per IN list
OR_TERMS = 500  # per-mailbox ranges per DELETE on MariaDB
t = timelines.c
st = timeline_state.c


def _boundary(user: str, excess: str) -> str:
    """SQL of a mailbox's boundary: its ``excess``-th oldest entry as an array [created_at,
    event_id] (arrays compare element by element), read from the oldest end."""
    return (f"(SELECT ARRAY[o.created_at, o.event_id] FROM timelines o WHERE o.user_id = {user}\n"
            f"          ORDER BY o.created_at, o.event_id LIMIT 1 OFFSET {excess} - 1)")


def _trimmed(bounds: str) -> str:
    """SQL of the CTEs ``gone`` (each mailbox's entries up to its boundary in ``bounds``,
    deleted) and ``counted`` (how many went per mailbox)."""
    return f"""gone AS (
  DELETE FROM timelines t USING {bounds}
  WHERE t.user_id = {bounds}.user_id AND (t.created_at, t.event_id) <= ({bounds}.bound_at,
                                                                      {bounds}.bound_id)
  RETURNING t.user_id
), counted AS (
  SELECT user_id, count(*) AS n FROM gone GROUP BY user_id
)"""


# PostgreSQL: all of it in one statement, the users sent as one array and each mailbox's
# excess (its OFFSET) read from its own row
_PG_CAP = text(f"""
WITH boundaries AS (
  SELECT s.user_id,
         {_boundary("s.user_id", "s.entries - :cap")} AS bound
  FROM timeline_state s
  WHERE s.user_id = ANY(ARRAY(SELECT json_array_elements_text(CAST(:users AS JSON))))
    AND s.entries > :mark
), over AS (
  SELECT user_id, bound, bound[1] AS bound_at, bound[2] AS bound_id FROM boundaries
), {_trimmed("over")}
UPDATE timeline_state s
SET floor_at = CASE WHEN over.bound IS NOT NULL
                         AND (over.bound_at, over.bound_id) > (s.floor_at, s.floor_id)
                    THEN over.bound_at ELSE s.floor_at END,
    floor_id = CASE WHEN over.bound IS NOT NULL
                         AND (over.bound_at, over.bound_id) > (s.floor_at, s.floor_id)
                    THEN over.bound_id ELSE s.floor_id END,
    entries = CASE WHEN over.bound IS NULL
                   THEN (SELECT count(*) FROM timelines c WHERE c.user_id = s.user_id)
                   ELSE GREATEST(s.entries - COALESCE(counted.n, 0), 0) END
FROM over LEFT JOIN counted ON counted.user_id = over.user_id
WHERE s.user_id = over.user_id
RETURNING COALESCE(counted.n, 0) AS n
""")

# PostgreSQL: a fan-out's write and its cap in one statement (``push_capped``). The entries go
# in; each mailbox they grew past the high-water mark ``:mark`` loses its oldest entries
# beyond the newest ``:cap``, found among the rows it
# held before (all a statement's own snapshot shows: the rows it inserts are not visible to
# it) and older than every entry it is given now: those are its oldest, whatever else it
# holds. They are found and deleted in one pass per mailbox (an index scan from its oldest end
# for their row addresses, then a TID scan), the floor raised to the newest of them. Where
# fewer such entries exist than the mailbox is over (a write older than entries it holds,
# more new entries than the cap, a bound over the true count) it is one of the statement's
# rows, left for the cap above, exact whatever the state.
_ENTRIES = """
  INSERT INTO timelines (user_id, event_id, created_at)
  SELECT u, coalesce(CAST(i AS BIGINT), CAST(:id AS BIGINT)),
         coalesce(CAST(a AS BIGINT), CAST(:at AS BIGINT))
  FROM ROWS FROM (json_array_elements_text(CAST(:users AS JSON)),
                  json_array_elements_text(CAST(:ids AS JSON)),
                  json_array_elements_text(CAST(:ats AS JSON))) AS r(u, i, a)"""
ENTRIES_INSERT = _ENTRIES + """
  ON CONFLICT DO NOTHING"""  # the entries of entry_columns(), each once


def _push_capped(entries: str) -> TextClause:
    return text(f"""
WITH new AS ({entries}
  RETURNING user_id, created_at, event_id
), added AS (
  SELECT n.user_id, count(*) AS n, min(ARRAY[n.created_at, n.event_id]) AS low,
         coalesce(max(s.entries), 0) AS entries
  FROM new n LEFT JOIN timeline_state s ON s.user_id = n.user_id
  GROUP BY n.user_id
), gone AS (
  DELETE FROM timelines t
  WHERE t.ctid = ANY(ARRAY(
    SELECT o.ctid FROM added a CROSS JOIN LATERAL (
      SELECT ctid FROM timelines
      WHERE user_id = a.user_id AND (created_at, event_id) < (a.low[1], a.low[2])
      ORDER BY created_at, event_id LIMIT greatest(a.entries + a.n - :cap, 0)) o
    WHERE a.entries + a.n > :mark AND a.n <= :cap))
  RETURNING t.user_id, t.created_at, t.event_id
), counted AS (
  SELECT user_id, count(*) AS n, max(ARRAY[created_at, event_id]) AS bound
  FROM gone GROUP BY user_id
), kept AS (
  INSERT INTO timeline_state (user_id, entries, floor_at, floor_id)
  SELECT a.user_id, a.n - coalesce(c.n, 0), coalesce(c.bound[1], 0), coalesce(c.bound[2], 0)
  FROM added a LEFT JOIN counted c ON c.user_id = a.user_id
  ORDER BY a.user_id
  ON CONFLICT (user_id) DO UPDATE
  SET entries = GREATEST(timeline_state.entries + EXCLUDED.entries, 0),
      floor_at = CASE WHEN (EXCLUDED.floor_at, EXCLUDED.floor_id)
                           > (timeline_state.floor_at, timeline_state.floor_id)
                      THEN EXCLUDED.floor_at ELSE timeline_state.floor_at END,
      floor_id = CASE WHEN (EXCLUDED.floor_at, EXCLUDED.floor_id)
                           > (timeline_state.floor_at, timeline_state.floor_id)
                      THEN EXCLUDED.floor_id ELSE timeline_state.floor_id END
)
SELECT a.user_id FROM added a LEFT JOIN counted c ON c.user_id = a.user_id
WHERE a.entries + a.n - coalesce(c.n, 0) > :mark
""")


# The same with a plain INSERT, tried first: ON CONFLICT looks each entry up in the primary key
# before inserting it, a second descent of the index per row (about a third of the insert's
# time); a plain insert finds a duplicate in its one descent and fails the statement, which then
# runs again, from a savepoint, in the form above (push_capped_pg). A duplicate is rare: a
# follow's back-fill meeting a fan-out of the same post, or a job run twice.
_PG_PUSH_NEW = _push_capped(_ENTRIES)
_PG_PUSH_CAPPED = _push_capped(ENTRIES_INSERT)


def push_statement(entries: str) -> str:
    """The text of the push-and-cap statement around ``entries`` (an ``INSERT INTO
    timelines`` of the entries; ``:cap`` and ``:mark``, the high-water mark, its
    parameters): the W1 bench's SQL floor runs it with entries of its own."""
    return _push_capped(entries).text


def entry_columns(rows: Sequence[tuple[str, int, int]]) -> dict[str, str | int | None]:
    """(user, event id, created_at) entries as the ``:users``, ``:ids`` and ``:ats`` JSON
    arrays the PostgreSQL writes read: json.dumps writes thousands of values at C speed where
    the driver would adapt a list element by element in Python. An event id or date that
    every entry shares (one event's fan-out) goes once, as ``:id`` / ``:at``, with an empty
    array: the server then splits one array, not three (a shorter array reads as NULLs)."""
    users, ids, ats = zip(*rows, strict=True)
    params: dict[str, str | int | None] = {"users": json.dumps(users)}
    for many, one, values in (("ids", "id", ids), ("ats", "at", ats)):
        shared = values.count(values[0]) == len(values)
        params[many] = "[]" if shared else json.dumps(values)
        params[one] = values[0] if shared else None
    return params


def push_capped_pg(db: Database, conn: Connection, rows: Sequence[tuple[str, int, int]],
                   cap_to: int) -> None:
    """(user, event id, created_at) entries written and the cap held, on PostgreSQL."""
    if not rows:
        return
    params = {**entry_columns(rows), "cap": cap_to, "mark": high_water(cap_to)}
    try:
        with conn.begin_nested():
            left = db.fetch(conn, _PG_PUSH_NEW, params)
    except IntegrityError:  # an entry already there: the form that skips it
        left = db.fetch(conn, _PG_PUSH_CAPPED, params)
    if left:
        cap(conn, [r[0] for r in left], cap_to)


def cap(conn: Connection, users: Sequence[str], cap: int, mark: int | None = None) -> int:
    """Trims every mailbox of ``users`` whose bound passes ``mark`` (by default the cap's
    high-water mark) back to ``cap``; the entries removed."""
    wanted = sorted(set(users))
    mark = high_water(cap) if mark is None else mark
    if conn.dialect.name == "postgresql":
        return sum(int(r.n) for r in conn.execute(_PG_CAP, {"users": json.dumps(wanted),
                                                             "cap": cap, "mark": mark}))
    if conn.dialect.name == "mysql":
        return _cap_mysql(conn, wanted, cap, mark)
    return _cap_sqlite(conn, wanted, cap, mark)


def _cap_sqlite(conn: Connection, wanted: list[str], cap: int, mark: int,
                again: bool = True) -> int:
    """:func:`cap` on SQLite, a group of mailboxes at a time; mailboxes whose bounds were
    counted again (:func:`_trim`) are capped ``again`` with them."""
    by_excess: dict[int, list[str]] = defaultdict(list)
    for start in range(0, len(wanted), IN_LIST):
        for row in conn.execute(select(st.user_id, st.entries).where(
                st.user_id.in_(wanted[start:start + IN_LIST]), st.entries > mark)):
            by_excess[int(row.entries) - cap].append(row.user_id)
    removed, recounted = 0, []
    for excess, group in sorted(by_excess.items()):
        for start in range(0, len(group), IN_LIST):
            gone, exact = _trim(conn, group[start:start + IN_LIST], excess)
            removed += gone
            if not exact:
                recounted += group[start:start + IN_LIST]
    if recounted and again:
        removed += _cap_sqlite(conn, sorted(recounted), cap, mark, again=False)
    return removed


def _marks(n: int) -> str:
    return ", ".join(["%s"] * n)


# MariaDB: each mailbox's boundary, (user, boundary, excess) rows from one UNION ALL part per
# excess (MariaDB takes no column as an OFFSET)
_MYSQL_OLDEST = ("(SELECT o.{column} FROM timelines o WHERE o.user_id = s.user_id "
                 "ORDER BY o.created_at, o.event_id LIMIT 1 OFFSET {offset})")
_MYSQL_BOUNDARY = ("SELECT s.user_id, " + _MYSQL_OLDEST.replace("{column}", "created_at") + ", "
                   + _MYSQL_OLDEST.replace("{column}", "event_id") + ", {excess} "
                   "FROM timeline_state s WHERE s.user_id IN ({marks})")
# MariaDB: the floors and bounds of (user, boundary time, boundary id, excess) rows given as one
# JSON text, joined to their rows by primary key (MariaDB may set floor_id before it compares
# for floor_at: floor_at comes out the same either way)
_MYSQL_RAISE = """UPDATE timeline_state s JOIN JSON_TABLE(%s, '$[*]' COLUMNS (
  user_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]',
  bound_at BIGINT PATH '$[1]', bound BIGINT PATH '$[2]', k BIGINT PATH '$[3]'
  )) AS b ON s.user_id = b.user_id
SET s.floor_id = IF((b.bound_at, b.bound) > (s.floor_at, s.floor_id), b.bound, s.floor_id),
    s.floor_at = IF((b.bound_at, b.bound) > (s.floor_at, s.floor_id), b.bound_at, s.floor_at),
    s.entries = s.entries - b.k"""


def _cap_mysql(conn: Connection, wanted: list[str], cap: int, mark: int,
               again: bool = True) -> int:
    """:func:`cap` on MariaDB in a few statements for all the mailboxes, whatever their excess,
    each written as the driver runs it (no statement of hundreds of terms built and compiled
    through SQLAlchemy for every unit): the mailboxes over the cap; their boundaries; one
    DELETE of index ranges per :data:`OR_TERMS` mailboxes; one UPDATE of floors and bounds
    (``JSON_TABLE``, MariaDB 10.6 or later). Where the DELETE removed another number of rows
    than the boundaries imply (a bound over the true count), the bounds are counted again from
    the rows, and those mailboxes capped ``again`` with them."""
    over: list[tuple[str, int]] = []
    for start in range(0, len(wanted), IN_LIST):
        part = wanted[start:start + IN_LIST]
        over += [(str(u), int(n) - cap) for u, n in conn.exec_driver_sql(
            f"SELECT user_id, entries FROM timeline_state WHERE user_id IN ({_marks(len(part))})"
            " AND entries > %s", (*part, mark))]
    removed, recounted = 0, []
    over.sort(key=lambda row: row[1])
    for start in range(0, len(over), IN_LIST):
        gone, exact = _trim_mysql(conn, over[start:start + IN_LIST])
        removed += gone
        if not exact:
            recounted += [u for u, _ in over[start:start + IN_LIST]]
    if recounted and again:
        removed += _cap_mysql(conn, sorted(recounted), cap, mark, again=False)
    return removed


def _trim_mysql(conn: Connection, over: list[tuple[str, int]]) -> tuple[int, bool]:
    """Takes each (user, excess) mailbox's ``excess`` oldest entries out: (entries removed,
    whether the bounds were exact; if not, they are counted again)."""
    by_excess: dict[int, list[str]] = defaultdict(list)
    for user, excess in over:
        by_excess[excess].append(user)
    parts = [_MYSQL_BOUNDARY.format(offset=excess - 1, excess=excess, marks=_marks(len(group)))
             for excess, group in by_excess.items()]
    found = [(str(u), int(a), int(b), int(k)) for u, a, b, k in conn.exec_driver_sql(
        " UNION ALL ".join(parts), tuple(u for group in by_excess.values() for u in group))
        if b is not None]
    gone = 0
    for start in range(0, len(found), OR_TERMS):
        part = found[start:start + OR_TERMS]
        terms = " OR ".join(["(user_id = %s AND created_at <= %s AND (created_at < %s OR "
                             "event_id <= %s))"] * len(part))
        gone += max(conn.exec_driver_sql(
            f"DELETE FROM timelines WHERE {terms}",
            tuple(v for u, a, b, _ in part for v in (u, a, a, b))).rowcount, 0)
    exact = len(found) == len(over) and gone == sum(k for *_, k in found)
    if found:
        conn.exec_driver_sql(_MYSQL_RAISE, (json.dumps(
            [(u, a, b, k if exact else 0) for u, a, b, k in found]),))
    if not exact:
        users = [u for u, _ in over]
        conn.exec_driver_sql(
            "UPDATE timeline_state s SET entries = (SELECT count(*) FROM timelines t WHERE "
            f"t.user_id = s.user_id) WHERE s.user_id IN ({_marks(len(users))})", tuple(users))
    return gone, exact


def _trim(conn: Connection, users: list[str], excess: int) -> tuple[int, bool]:
    """SQLite: takes the ``excess`` oldest entries out of each of ``users``' mailboxes:
    (entries removed, whether the bounds were exact; if not, they are counted again)."""
    oldest = timelines.alias("oldest")

    def boundary(column: str) -> Any:
        return (select(oldest.c[column]).where(oldest.c.user_id == st.user_id)
                .order_by(oldest.c.created_at, oldest.c.event_id).limit(1)
                .offset(excess - 1).scalar_subquery())

    found = [(r.user_id, int(r.bound_at), int(r.boundary)) for r in conn.execute(
        select(st.user_id, boundary("created_at").label("bound_at"),
               boundary("event_id").label("boundary")).where(st.user_id.in_(users)))
        if r.boundary is not None]
    gone = _delete(conn, found) if found else 0
    exact = len(found) == len(users) and gone == excess * len(found)
    if exact:
        _raise(conn, found, st.entries - excess)
    else:  # a bound over the true count: the rows say how many are left
        if found:
            _raise(conn, found, st.entries)
        left = (select(func.count()).select_from(timelines)
                .where(t.user_id == st.user_id).scalar_subquery())
        conn.execute(update(timeline_state).where(st.user_id.in_(users)).values(entries=left))
    return gone, exact


def _delete(conn: Connection, found: list[tuple[str, int, int]]) -> int:
    """SQLite: each mailbox's entries up to its boundary, one statement the driver runs per
    mailbox, in process."""
    result = conn.execute(delete(timelines).where(
        t.user_id == bindparam("w_user"),
        tuple_(t.created_at, t.event_id) <= tuple_(bindparam("w_at"), bindparam("w_bound"))),
        [{"w_user": u, "w_at": a, "w_bound": b} for u, a, b in found])
    return max(result.rowcount, 0)


def _raise(conn: Connection, found: list[tuple[str, int, int]], entries: object) -> None:
    """SQLite: each floor up to its boundary (kept if higher) and the bounds set to
    ``entries``, as in :func:`_delete`: no statement built per call."""
    at: BindParameter[Any] = bindparam("w_at")
    bound: BindParameter[Any] = bindparam("w_bound")
    higher = tuple_(st.floor_at, st.floor_id) < tuple_(at, bound)
    conn.execute(update(timeline_state).where(st.user_id == bindparam("w_user")).values(
        floor_at=case((higher, at), else_=st.floor_at),
        floor_id=case((higher, bound), else_=st.floor_id), entries=entries),
        [{"w_user": u, "w_at": a, "w_bound": b} for u, a, b in found])
