"""A timeline read's statements on SQL, each built once per shape and run straight on the
driver (:meth:`Database.fetch`, prepared by psycopg): the mailbox page, its floor, and on
PostgreSQL the whole first step of a read in one statement (:func:`pg_head`).

The whole step in one PostgreSQL statement (``TimelineStore.merged``, :func:`merged_statement`).

The mailbox page above its floor, the reader's followees with each one's cut decided in SQL
(:func:`tidings.domain.timeline.decide` and :func:`~tidings.domain.timeline.pull_cut`, from
``timeline_sources`` and the deployment's model and threshold passed as parameters), their
newest events up to it (``LATERAL``, through the partial index ``ix_events_actor_created_at_id``
on (actor, created_at, id) of unretracted events, ``type`` included: an index-only scan, no
heap page read for the rows that do not make the page), merged in the timeline's order
(created_at, then id) with the mailbox copy winning, limited,
and only then joined to ``events`` for the page's own rows; the reader's mutes ride along in
the last column. One round trip, prepared by psycopg, where the steps took two or three.

A followee's pull is skipped outright when the mailbox alone fills the page above its cut
(a pushed source), and no followee's pull goes below the mailbox page's last entry then.

In the first pass, a followee pulled whole (no cut) is read with no lower or upper bound on
its position when the read has none to apply (the mailbox page is not full, no ``:above``): each
bound on the index's second column costs about a microsecond a descent, a fifth of one, even
where it excludes nothing. The followees with and without bounds are two branches of a
``UNION ALL``, each followee in exactly one of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Integer,
    TextClause,
    and_,
    bindparam,
    func,
    or_,
    select,
    text,
    tuple_,
)

from tidings.domain.timeline import NO_BOUND, Candidate, Position, ReadPlan
from tidings.domain.views import TimelineEntry
from tidings.store.sql.schema import events, timeline_state, timelines
from tidings.store.sql.timeline import positions
from tidings.store.sql.timeline.positions import compared, params

t = timelines.c
st = timeline_state.c

FLOOR = select(st.floor_at, st.floor_id).where(st.user_id == bindparam("user"))
STATE = select(st.floor_at, st.floor_id, st.entries).where(st.user_id == bindparam("user"))


# A mailbox's ``:skip`` + 1-th oldest entry (``:user``): with ``:skip`` its bound minus the
# cap, less one, the newest entry a read with the cap does not show. Read from the oldest end,
# the margin of the high-water mark at most; where the bound is over the true count it is a
# few entries higher (those are then pulled).
HIDDEN = (select(t.created_at, t.event_id).where(t.user_id == bindparam("user"))
          .order_by(t.created_at, t.event_id).limit(1).offset(bindparam("skip", type_=Integer)))
# the same counted from the newest end (``:skip`` = the cap entries above it): for a bound so
# far over the true count that HIDDEN finds nothing
NEWEST_HIDDEN = (select(t.created_at, t.event_id).where(t.user_id == bindparam("user"))
                 .order_by(t.created_at.desc(), t.event_id.desc()).limit(1)
                 .offset(bindparam("skip", type_=Integer)))


# PostgreSQL: the floor as a read with the cap (``:cap``) sees it, as one row (fat, fid): the
# stored floor, raised to the entry :func:`hidden` finds when the mailbox's bound passes the
# cap (the subquery runs only then); a mailbox with no state is complete from the start
FLOOR_CTE = """fl AS (
  SELECT f[1] AS fat, f[2] AS fid FROM (
    SELECT coalesce(max(greatest(ARRAY[s.floor_at, s.floor_id],
      CASE WHEN s.entries > CAST(:cap AS BIGINT) THEN (
        SELECT ARRAY[o.created_at, o.event_id] FROM timelines o WHERE o.user_id = :user
        ORDER BY o.created_at, o.event_id LIMIT 1 OFFSET s.entries - CAST(:cap AS BIGINT) - 1)
      END)), CAST(ARRAY[0, 0] AS BIGINT[])) AS f
    FROM timeline_state s WHERE s.user_id = :user) x)"""


@lru_cache(maxsize=64)
def page(head: bool, before: bool, after: bool, limit: int, rows: bool) -> Any:
    """A mailbox page, newest first by position: ``:user``, ``:before_at`` / ``:before_id``
    and ``:after_at`` / ``:after_id``; with ``head``, strictly above the mailbox's floor too,
    which rides along as the seventh and eighth columns, its bound and each entry's time as
    the ninth and tenth. ``rows``: compare positions as row
    values (PostgreSQL; :mod:`.positions`)."""
    columns: list[Any] = [events.c.id, events.c.type, events.c.actor, events.c.object,
                          events.c.payload, events.c.created_at]
    where = [t.user_id == bindparam("user"), events.c.retracted_at.is_(None)]
    if head:
        mine = st.user_id == bindparam("user")
        floor_at = select(func.coalesce(func.max(st.floor_at), 0)).where(mine).scalar_subquery()
        floor_id = select(func.coalesce(func.max(st.floor_id), 0)).where(mine).scalar_subquery()
        entries = select(func.coalesce(func.max(st.entries), 0)).where(mine).scalar_subquery()
        columns += [floor_at.label("floor_at"), floor_id.label("floor_id"),
                    entries.label("entries"), t.created_at.label("at")]
        where.append(tuple_(t.created_at, t.event_id) > tuple_(floor_at, floor_id) if rows
                     else and_(t.created_at >= floor_at,
                               or_(t.created_at > floor_at, t.event_id > floor_id)))
    if before:
        where.append(compared("<", t.created_at, t.event_id, "before", rows=rows))
    if after:
        where.append(compared(">", t.created_at, t.event_id, "after", rows=rows))
    return (select(*columns).join(timelines, t.event_id == events.c.id).where(*where)
            .order_by(t.created_at.desc(), t.event_id.desc()).limit(limit))


@lru_cache(maxsize=64)
def pg_head(before: bool, after: bool, limit: int) -> Any:
    """PostgreSQL: :func:`page` with ``head``, plus one last row (its id NULL) carrying the
    floor even when the page is empty and, as JSON text, the reader's followees with their
    stored source state in the payload column (what ``GraphStore.followee_sources`` reads:
    ``[[followee, followers, model, push_from, actor, push_from_at], …]``) and the reader's
    mutes in the object column (``GraphStore.mutes``: ``[[kind, value], …]``)."""
    bounds = (" AND (t.created_at, t.event_id) < (:before_at, :before_id)" if before else ""
              ) + (" AND (t.created_at, t.event_id) > (:after_at, :after_id)" if after else "")
    return text(f"""
WITH {FLOOR_CTE}
SELECT * FROM (
  (SELECT e.id, e.type, e.actor, e.object, e.payload, e.created_at, fl.fat, fl.fid
   FROM fl CROSS JOIN timelines t JOIN events e ON e.id = t.event_id
   WHERE t.user_id = :user AND e.retracted_at IS NULL
     AND (t.created_at, t.event_id) > (fl.fat, fl.fid){bounds}
   ORDER BY t.created_at DESC, t.event_id DESC LIMIT {int(limit)})
  UNION ALL
  SELECT NULL, NULL, NULL,
    (SELECT coalesce(json_agg(json_build_array(m.kind, m.value) ORDER BY m.kind, m.value),
                     '[]')::text
     FROM mutes m WHERE m.user_id = :user),
    (SELECT coalesce(json_agg(json_build_array(f.followee, s.followers, s.model,
                                               s.push_from, s.actor, s.push_from_at)),
                     '[]')::text
     FROM follows f LEFT JOIN timeline_sources s ON s.actor = f.followee
     WHERE f.follower = :user),
    NULL, (SELECT fat FROM fl), (SELECT fid FROM fl)
) AS head ORDER BY created_at DESC NULLS LAST, id DESC NULLS LAST""").bindparams(
        *([bindparam("before_at", type_=BigInteger), bindparam("before_id", type_=BigInteger)]
          if before else []),
        *([bindparam("after_at", type_=BigInteger), bindparam("after_id", type_=BigInteger)]
          if after else []))


# PostgreSQL, a merged read's first page (no upper bound): the mailbox part without the
# hidden entry's read. Entries are ranked newest first from the top, so the newest ``:cap``
# held are the first ``:cap`` above the floor (those at or below it are older than all of
# them): the box scans at most that many. Its floor (``fl``) is the stored one when the box is
# full (then every cut it decides that counts is above the box's last entry, and the floor is
# below it either way), else the floor under the newest ``:cap`` (:data:`FLOOR_CTE`'s).
FIRST_BOX = """fl0 AS (
  SELECT coalesce(max(floor_at), 0) AS fat, coalesce(max(floor_id), 0) AS fid,
         max(entries) AS entries
  FROM timeline_state WHERE user_id = :user),
box AS (
  SELECT t.at, t.id FROM (
    SELECT t.created_at AS at, t.event_id AS id FROM fl0 CROSS JOIN timelines t
    WHERE t.user_id = :user AND (t.created_at, t.event_id) > (fl0.fat, fl0.fid){over}
    ORDER BY t.created_at DESC, t.event_id DESC LIMIT CAST(:cap AS BIGINT)) t
  JOIN events b ON b.id = t.id
  WHERE b.retracted_at IS NULL
  ORDER BY t.at DESC, t.id DESC LIMIT {n}),
fl AS (
  SELECT f[1] AS fat, f[2] AS fid FROM (
    SELECT CASE WHEN (SELECT count(*) FROM box) = {n} THEN ARRAY[fl0.fat, fl0.fid]
      ELSE greatest(ARRAY[fl0.fat, fl0.fid], CASE WHEN fl0.entries > CAST(:cap AS BIGINT) THEN (
        SELECT ARRAY[o.created_at, o.event_id] FROM timelines o WHERE o.user_id = :user
        ORDER BY o.created_at, o.event_id LIMIT 1
        OFFSET fl0.entries - CAST(:cap AS BIGINT) - 1) END) END AS f
    FROM fl0) x)"""


def bounds(user: str, before: Position | None, after: Position | None) -> dict[str, Any]:
    return {"user": user, **params("before", before), **params("after", after)}


def cap_param(cap: int | None) -> int:
    """``:cap`` of :data:`FLOOR_CTE` (None: no cap, above every bound)."""
    return NO_BOUND if cap is None else cap


# A position is two columns here, (…_at, …_id). A range of positions on events also names its
# times alone (``created_at BETWEEN``): PostgreSQL estimates a row comparison poorly, and might
# then take the index on created_at over the followee's own (actor, created_at, id). Each form
# below lists the reader's followees as (actor, whole, pat, pid): ``whole`` when the source is
# pulled whole (its cut is above every event), else its ``push_from`` position (pat, pid),
# which the cut raises to the floor (:data:`CUTS`). ``fl`` (the floor: fat, fid) and ``low``
# (lat, lid) are one-row CTEs.
MODEL = """(CASE WHEN s.model IN ('push', 'pull') THEN s.model
                WHEN CAST(:model AS TEXT) = 'hybrid' THEN
                  CASE WHEN s.followers > CAST(:celebrity AS BIGINT) THEN 'pull'
                       ELSE 'push' END
                WHEN CAST(:model AS TEXT) = 'pull' THEN 'pull'
                ELSE 'push' END)"""
# each followee, as decide() and pull_cut() see it from the state stored
SOURCES = f"""
  SELECT f.followee AS actor,
    {MODEL} = 'pull' OR (s.actor IS NOT NULL AND s.push_from IS NULL) AS whole,
    coalesce(s.push_from_at, 0) AS pat, coalesce(s.push_from, 0) AS pid
  FROM follows f
  LEFT JOIN LATERAL (SELECT actor, followers, model, push_from, push_from_at
                     FROM timeline_sources WHERE actor = f.followee LIMIT 1) s ON true
  WHERE f.follower = :user"""
# the same where the deployment is pull: a source is pulled whole unless overridden to push
# (and pushed since): only the overrides are looked up, in their own small index, joined to
# the followees as a set (a merge of two index scans where the overrides are few) rather than
# probed once per followee. (The push/hybrid form above keeps its probe per followee: there
# every source has a row, and a join would read them all.)
PULLED = """
  SELECT f.followee AS actor,
    NOT (o.model = 'push' AND o.push_from IS NOT NULL) IS TRUE AS whole,
    coalesce(o.push_from_at, 0) AS pat, coalesce(o.push_from, 0) AS pid
  FROM follows f
  LEFT JOIN timeline_sources o ON o.actor = f.followee AND o.model IS NOT NULL
  WHERE f.follower = :user"""

# A source whose stored state a push deployment cannot take as pushed from the start: an
# override, pulled when its last post was fanned out (``push_from`` NULL), or pushed only since
# some event (``push_from`` > 0). The partial index ix_timeline_sources_actor_unpushed
# (PostgreSQL, migration 0023) holds exactly these.
UNPUSHED = "(o.model IS NOT NULL OR o.push_from IS NULL OR o.push_from <> 0)"
# the same where the deployment is push: every other followee's posts are in the mailbox
# above its floor, so its cut is the floor (pull_cut). Only the sources of UNPUSHED are looked
# up, in their own small index, as a set; the others are listed — each with the floor as its
# cut — only when the read reaches below the floor (the mailbox page is not full above it),
# the only time their cut matters. A pushed reader's first page then reads no source state:
# before, one probe of timeline_sources per followee.
PUSHED = f"""
  SELECT f.followee AS actor, o.model = 'pull' OR o.push_from IS NULL AS whole,
    coalesce(o.push_from_at, 0) AS pat, coalesce(o.push_from, 0) AS pid
  FROM follows f
  JOIN timeline_sources o ON o.actor = f.followee AND {UNPUSHED}
  WHERE f.follower = :user
  UNION ALL
  SELECT f.followee, false, 0, 0 FROM follows f
  WHERE f.follower = :user
    AND ((SELECT fat FROM fl), (SELECT fid FROM fl)) > ((SELECT lat FROM low),
                                                        (SELECT lid FROM low))
    AND NOT EXISTS (SELECT 1 FROM timeline_sources o WHERE o.actor = f.followee
                    AND {UNPUSHED})"""
FORMS = {"sources": SOURCES, "pulled": PULLED, "pushed": PUSHED}
# a followee's cut: above everything when pulled whole, else the higher of its push_from and
# the floor
_HIGHER = "(x.pat, x.pid) > (fl.fat, fl.fid)"
CUTS = f"""
  SELECT x.actor,
    CASE WHEN x.whole THEN {NO_BOUND} WHEN {_HIGHER} THEN x.pat ELSE fl.fat END AS cat,
    CASE WHEN x.whole THEN {NO_BOUND} WHEN {_HIGHER} THEN x.pid ELSE fl.fid END AS cid
  FROM fl CROSS JOIN ({{form}}) x"""
WHOLE = f"(src.cat = {NO_BOUND} AND src.cid = {NO_BOUND})"
NOTHING_LOW = "((SELECT lat FROM low) = 0 AND (SELECT lid FROM low) = 0)"
LOW = "((SELECT lat FROM low), (SELECT lid FROM low))"
BOUND = "((SELECT bat FROM bound), (SELECT bid FROM bound))"


@lru_cache(maxsize=64)
def merged_statement(below: bool, above: bool, limit: int, form: str = "sources") -> TextClause:
    """``:user``, ``:model`` / ``:celebrity`` (the deployment's; the ``pulled`` and
    ``pushed`` forms, for a pull or a push deployment, ignore them), ``:types``
    (:func:`array_text`), ``:below_at`` / ``:below_id`` and ``:above_at`` / ``:above_id``
    (positions); one row per event of the page, newest first by position."""
    n = int(limit)
    under = (" AND ({at}, {id}) < (CAST(:below_at AS BIGINT), CAST(:below_id AS BIGINT))"
             if below else "")
    over = (" AND (t.created_at, t.event_id) > (CAST(:above_at AS BIGINT),"
            " CAST(:above_id AS BIGINT))" if above else "")
    least_at, least_id = (("CAST(:above_at AS BIGINT)", "CAST(:above_id AS BIGINT)") if above
                          else ("0", "0"))
    head = (FIRST_BOX.format(over=over, n=n) if not below else f"""{FLOOR_CTE},
box AS (
  SELECT t.created_at AS at, t.event_id AS id
  FROM fl CROSS JOIN timelines t JOIN events b ON b.id = t.event_id
  WHERE t.user_id = :user AND b.retracted_at IS NULL
    AND (t.created_at, t.event_id) > (fl.fat, fl.fid){over}{
        under.format(at="t.created_at", id="t.event_id")}
  ORDER BY t.created_at DESC, t.event_id DESC LIMIT {n})""")
    return text(f"""
WITH {head},
low AS (
  SELECT CASE WHEN count(*) = {n} THEN (min(ARRAY[at, id]))[1] ELSE {least_at} END AS lat,
         CASE WHEN count(*) = {n} THEN (min(ARRAY[at, id]))[2] ELSE {least_id} END AS lid
  FROM box),
src AS ({CUTS.format(form=FORMS[form])}),
newest AS (
  SELECT src.actor, src.cat, src.cid, p.at, p.id FROM src CROSS JOIN LATERAL (
    SELECT e.created_at AS at, e.id FROM events e
    WHERE e.actor = src.actor
      AND e.retracted_at IS NULL AND e.type = ANY(CAST(:types AS VARCHAR[])){
        under.format(at="e.created_at", id="e.id")}
    ORDER BY e.created_at DESC, e.id DESC LIMIT 1) p
  WHERE {WHOLE} AND {NOTHING_LOW}
  UNION ALL
  SELECT src.actor, src.cat, src.cid, p.at, p.id FROM src CROSS JOIN LATERAL (
    SELECT e.created_at AS at, e.id FROM events e
    WHERE e.actor = src.actor AND (e.created_at, e.id) <= (src.cat, src.cid)
      AND (e.created_at, e.id) > {LOW}
      AND e.created_at BETWEEN (SELECT lat FROM low) AND src.cat
      AND e.retracted_at IS NULL AND e.type = ANY(CAST(:types AS VARCHAR[])){
        under.format(at="e.created_at", id="e.id")}
    ORDER BY e.created_at DESC, e.id DESC LIMIT 1) p
  WHERE (src.cat, src.cid) > {LOW} AND NOT ({WHOLE} AND {NOTHING_LOW})),
bound AS (
  SELECT coalesce(nth.at, (SELECT lat FROM low)) AS bat,
         coalesce(nth.id, (SELECT lid FROM low) + 1) AS bid
  FROM (SELECT 1) AS one LEFT JOIN (
    SELECT at, id FROM newest ORDER BY at DESC, id DESC OFFSET {n - 1} LIMIT 1) nth ON true),
pulled AS (
  SELECT p.at, p.id FROM newest CROSS JOIN LATERAL (
    SELECT e.created_at AS at, e.id FROM events e
    WHERE e.actor = newest.actor AND (e.created_at, e.id) <= (newest.at, newest.id)
      AND (e.created_at, e.id) >= {BOUND}
      AND e.created_at BETWEEN (SELECT bat FROM bound) AND newest.at
      AND e.retracted_at IS NULL AND e.type = ANY(CAST(:types AS VARCHAR[]))
    ORDER BY e.created_at DESC, e.id DESC LIMIT {n}) p
  WHERE (newest.at, newest.id) >= {BOUND}
  ORDER BY p.at DESC, p.id DESC LIMIT {n}),
page AS (
  SELECT at, id, min(pulled) AS pulled
  FROM (SELECT at, id, 0 AS pulled FROM box UNION ALL SELECT at, id, 1 FROM pulled) c
  GROUP BY at, id ORDER BY at DESC, id DESC LIMIT {n})
SELECT e.id, e.type, e.actor, e.object, e.payload, e.created_at, page.pulled,
  CASE WHEN page.pulled = 1 AND e.exclude <> '[]' THEN e.exclude END,
  (SELECT json_agg(json_build_array(m.kind, m.value))::text FROM mutes m
   WHERE m.user_id = :user)
FROM page JOIN events e ON e.id = page.id
ORDER BY e.created_at DESC, e.id DESC""")


@lru_cache(maxsize=16)
def array_text(values: tuple[str, ...]) -> str:
    """``values`` as the text of a PostgreSQL array (each element quoted), which the server
    reads into the ``VARCHAR[]`` the statement casts it to: the driver sends text as it is,
    where a list is adapted element by element on every call (about 20 µs a read)."""
    quoted = ('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "{" + ",".join(quoted) + "}"


def merged_params(user: str, plan: ReadPlan, below: Position | None, above: Position | None
           ) -> dict[str, Any]:
    return {"user": user, "model": plan.model, "celebrity": plan.celebrity,
            "types": array_text(plan.types), "cap": cap_param(plan.cap),
            **positions.params("below", below),
            **positions.params("above", above)}


# the C scanner json.loads ends in, without loads' and raw_decode's Python around it (their
# checks for surrounding whitespace, which text tidings wrote has none of): ~0.4 µs a row
_scan: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]  # set in __init__, not stubbed


def _object(text: str) -> Any:
    """``json.loads(text)``, the same result or error, faster for JSON text as tidings
    writes it (a payload): the scanner alone, ``json.loads`` for anything else."""
    try:
        found, end = _scan(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return found if end == len(text) else json.loads(text)


def candidates(rows: Sequence[Sequence[Any]]
               ) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """The statement's rows as candidates, and the mutes of the last column."""
    out = [Candidate(TimelineEntry(id_, type_, actor, object_, _object(payload), created_at),
                     pulled == 1, tuple(json.loads(exclude)) if exclude else ())
           for id_, type_, actor, object_, payload, created_at, pulled, exclude, _ in rows]
    mutes = json.loads(rows[0][-1]) if rows and rows[0][-1] else []
    return out, [(kind, value) for kind, value in mutes]
