"""The push mailboxes' cap, set-based: a few statements for all the mailboxes of a fan-out
chunk, whatever its size, instead of a handful per mailbox — one on PostgreSQL (``_PG_CAP``:
the steps below as data-modifying CTEs, each mailbox's own excess as its OFFSET).

Elsewhere the mailboxes over the cap are grouped by their excess ``k`` (their
``timeline_state.entries`` bound minus the cap: one group after an ordinary push). For a group:

1. one SELECT finds every mailbox's boundary, its ``k``-th oldest entry (a correlated
   ``ORDER BY event_id LIMIT 1 OFFSET k-1``: an index scan from the oldest end per mailbox);
2. one DELETE removes each mailbox's entries up to its boundary (PostgreSQL: joined to the
   boundaries sent as two arrays; elsewhere an OR of per-mailbox index ranges);
3. one UPDATE raises each floor to its boundary (never lowers it) and takes ``k`` off the
   bound — or, when the DELETE removed another number of rows than the boundaries imply (a
   bound that counted a duplicate push, a concurrent back-fill), sets the bounds of the group
   to their exact counts.

The result is the per-mailbox trim's: the newest ``cap`` entries kept, the floor raised past
the removed ones, so reads pull what is below it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    BindParameter,
    Connection,
    String,
    TextClause,
    and_,
    bindparam,
    case,
    column,
    delete,
    func,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from tidings.store.sql.database import Database
from tidings.store.sql.schema import timeline_state, timelines

IN_LIST = 5000  # users per IN list
OR_TERMS = 500  # per-mailbox ranges per statement, off PostgreSQL
t = timelines.c
st = timeline_state.c




def _boundary(user: str, excess: str) -> str:
    """SQL of a mailbox's boundary: its ``excess``-th oldest entry, read from the oldest end."""
    return (f"(SELECT o.event_id FROM timelines o WHERE o.user_id = {user}\n"
            f"          ORDER BY o.event_id LIMIT 1 OFFSET {excess} - 1)")


def _trimmed(bounds: str) -> str:
    """SQL of the CTEs ``gone`` (each mailbox's entries up to its boundary in ``bounds``,
    deleted) and ``counted`` (how many went per mailbox)."""
    return f"""gone AS (
  DELETE FROM timelines t USING {bounds}
  WHERE t.user_id = {bounds}.user_id AND t.event_id <= {bounds}.bound
  RETURNING t.user_id
), counted AS (
  SELECT user_id, count(*) AS n FROM gone GROUP BY user_id
)"""


# PostgreSQL: all of it in one statement, the users sent as one array and each mailbox's
# excess (its OFFSET) read from its own row
_PG_CAP = text(f"""
WITH over AS (
  SELECT s.user_id,
         {_boundary("s.user_id", "s.entries - :cap")} AS bound
  FROM timeline_state s
  WHERE s.user_id = ANY(ARRAY(SELECT json_array_elements_text(CAST(:users AS JSON))))
    AND s.entries > :cap
), {_trimmed("over")}
UPDATE timeline_state s
SET floor_id = GREATEST(s.floor_id, COALESCE(over.bound, 0)),
    entries = CASE WHEN over.bound IS NULL
                   THEN (SELECT count(*) FROM timelines c WHERE c.user_id = s.user_id)
                   ELSE GREATEST(s.entries - COALESCE(counted.n, 0), 0) END
FROM over LEFT JOIN counted ON counted.user_id = over.user_id
WHERE s.user_id = over.user_id
RETURNING COALESCE(counted.n, 0) AS n
""")

# PostgreSQL: a fan-out's write and its cap in one statement (``push_capped``). The entries go
# in; each mailbox they grew past the cap loses its oldest entries, found among the rows it
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
  RETURNING user_id, event_id
), added AS (
  SELECT n.user_id, count(*) AS n, min(n.event_id) AS low,
         coalesce(max(s.entries), 0) AS entries
  FROM new n LEFT JOIN timeline_state s ON s.user_id = n.user_id
  GROUP BY n.user_id
), gone AS (
  DELETE FROM timelines t
  WHERE t.ctid = ANY(ARRAY(
    SELECT o.ctid FROM added a CROSS JOIN LATERAL (
      SELECT ctid FROM timelines WHERE user_id = a.user_id AND event_id < a.low
      ORDER BY event_id LIMIT greatest(a.entries + a.n - :cap, 0)) o
    WHERE a.entries + a.n > :cap AND a.n <= :cap))
  RETURNING t.user_id, t.event_id
), counted AS (
  SELECT user_id, count(*) AS n, max(event_id) AS bound FROM gone GROUP BY user_id
), kept AS (
  INSERT INTO timeline_state (user_id, entries, floor_id)
  SELECT a.user_id, a.n - coalesce(c.n, 0), coalesce(c.bound, 0)
  FROM added a LEFT JOIN counted c ON c.user_id = a.user_id
  ORDER BY a.user_id
  ON CONFLICT (user_id) DO UPDATE
  SET entries = GREATEST(timeline_state.entries + EXCLUDED.entries, 0),
      floor_id = GREATEST(timeline_state.floor_id, EXCLUDED.floor_id)
)
SELECT a.user_id FROM added a LEFT JOIN counted c ON c.user_id = a.user_id
WHERE a.entries + a.n - coalesce(c.n, 0) > :cap
""")


# The same with a plain INSERT, tried first: ON CONFLICT looks each entry up in the primary key
# before inserting it, a second descent of the index per row (about a third of the insert's
# time); a plain insert finds a duplicate in its one descent and fails the statement, which then
# runs again, from a savepoint, in the form above (push_capped_pg). A duplicate is rare: a
# follow's back-fill meeting a fan-out of the same post, or a job run twice.
_PG_PUSH_NEW = _push_capped(_ENTRIES)
_PG_PUSH_CAPPED = _push_capped(ENTRIES_INSERT)


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
    params = {**entry_columns(rows), "cap": cap_to}
    try:
        with conn.begin_nested():
            left = db.fetch(conn, _PG_PUSH_NEW, params)
    except IntegrityError:  # an entry already there: the form that skips it
        left = db.fetch(conn, _PG_PUSH_CAPPED, params)
    if left:
        cap(conn, [r[0] for r in left], cap_to)


def cap(conn: Connection, users: Sequence[str], cap: int) -> int:
    """Trims every mailbox of ``users`` whose bound passes ``cap``; the entries removed."""
    wanted = sorted(set(users))
    if conn.dialect.name == "postgresql":
        return sum(int(r.n) for r in conn.execute(_PG_CAP, {"users": json.dumps(wanted),
                                                             "cap": cap}))
    by_excess: dict[int, list[str]] = defaultdict(list)
    for start in range(0, len(wanted), IN_LIST):
        for row in conn.execute(select(st.user_id, st.entries).where(
                st.user_id.in_(wanted[start:start + IN_LIST]), st.entries > cap)):
            by_excess[int(row.entries) - cap].append(row.user_id)
    removed = 0
    for excess, group in sorted(by_excess.items()):
        for start in range(0, len(group), IN_LIST):
            removed += _trim(conn, group[start:start + IN_LIST], excess, cap)
    return removed


def _trim(conn: Connection, users: list[str], excess: int, cap: int) -> int:
    """Takes the ``excess`` oldest entries out of each of ``users``' mailboxes."""
    oldest = timelines.alias("oldest")
    boundary = (select(oldest.c.event_id).where(oldest.c.user_id == st.user_id)
                .order_by(oldest.c.event_id).limit(1).offset(excess - 1).scalar_subquery())
    found = [(r.user_id, int(r.boundary)) for r in conn.execute(
        select(st.user_id, boundary.label("boundary")).where(st.user_id.in_(users)))
        if r.boundary is not None]
    gone = _delete(conn, found) if found else 0
    if found and gone == excess * len(found):
        _raise(conn, found, st.entries - excess)
    else:  # a bound over the true count: the rows say how many are left
        if found:
            _raise(conn, found, st.entries)
        left = (select(func.count()).select_from(timelines)
                .where(t.user_id == st.user_id).scalar_subquery())
        conn.execute(update(timeline_state).where(st.user_id.in_(users)).values(entries=left))
    return gone


def _delete(conn: Connection, found: list[tuple[str, int]]) -> int:
    if conn.dialect.name == "postgresql":
        bounds = func.unnest(bindparam("users", type_=ARRAY(String)),
                             bindparam("bounds", type_=ARRAY(BigInteger))
                             ).table_valued(column("user_id", String),
                                            column("bound", BigInteger)
                                            ).render_derived(name="b")
        result = conn.execute(delete(timelines).where(
            t.user_id == bounds.c.user_id, t.event_id <= bounds.c.bound),
            {"users": [u for u, _ in found], "bounds": [b for _, b in found]})
        return max(result.rowcount, 0)
    if conn.dialect.name == "sqlite":  # one statement the driver runs per mailbox, in process
        result = conn.execute(delete(timelines).where(
            t.user_id == bindparam("w_user"), t.event_id <= bindparam("w_bound")),
            [{"w_user": u, "w_bound": b} for u, b in found])
        return max(result.rowcount, 0)
    gone = 0  # MariaDB: a few statements of many terms (an executemany is a round trip a row)
    for start in range(0, len(found), OR_TERMS):
        part = found[start:start + OR_TERMS]
        gone += max(conn.execute(delete(timelines).where(or_(*(
            and_(t.user_id == u, t.event_id <= b) for u, b in part)))).rowcount, 0)
    return gone


def _raise(conn: Connection, found: list[tuple[str, int]], entries: object) -> None:
    """Each floor up to its boundary (kept if higher) and the bounds set to ``entries``."""
    if conn.dialect.name == "postgresql":
        bounds = func.unnest(bindparam("users", type_=ARRAY(String)),
                             bindparam("bounds", type_=ARRAY(BigInteger))
                             ).table_valued(column("user_id", String),
                                            column("bound", BigInteger)
                                            ).render_derived(name="b")
        conn.execute(update(timeline_state).where(st.user_id == bounds.c.user_id).values(
            floor_id=func.greatest(st.floor_id, bounds.c.bound), entries=entries),
            {"users": [u for u, _ in found], "bounds": [b for _, b in found]})
        return
    if conn.dialect.name == "sqlite":  # as in _delete: no statement built per call
        bound: BindParameter[Any] = bindparam("w_bound")
        conn.execute(update(timeline_state).where(st.user_id == bindparam("w_user")).values(
            floor_id=case((st.floor_id < bound, bound), else_=st.floor_id), entries=entries),
            [{"w_user": u, "w_bound": b} for u, b in found])
        return
    for start in range(0, len(found), OR_TERMS):
        part = found[start:start + OR_TERMS]
        floor = case(*((and_(st.user_id == u, st.floor_id < b), literal(b))
                       for u, b in part), else_=st.floor_id)
        conn.execute(update(timeline_state).where(st.user_id.in_([u for u, _ in part]))
                     .values(floor_id=floor, entries=entries))
