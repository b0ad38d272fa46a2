"""A timeline read's statements on SQL, each built once per shape and run straight on the
driver (:meth:`Database.fetch`, prepared by psycopg): the mailbox page, its floor, and on
PostgreSQL the whole first step of a read in one statement (:func:`pg_head`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import BigInteger, and_, bindparam, func, or_, select, text, tuple_

from tidings.domain.timeline import Position
from tidings.store.sql.positions import compared, params
from tidings.store.sql.schema import events, timeline_state, timelines

t = timelines.c
st = timeline_state.c

FLOOR = select(st.floor_at, st.floor_id).where(st.user_id == bindparam("user"))


@lru_cache(maxsize=64)
def page(head: bool, before: bool, after: bool, limit: int, rows: bool) -> Any:
    """A mailbox page, newest first by position: ``:user``, ``:before_at`` / ``:before_id``
    and ``:after_at`` / ``:after_id``; with ``head``, strictly above the mailbox's floor too,
    which rides along as the seventh and eighth columns. ``rows``: compare positions as row
    values (PostgreSQL; :mod:`.positions`)."""
    columns: list[Any] = [events.c.id, events.c.type, events.c.actor, events.c.object,
                          events.c.payload, events.c.created_at]
    where = [t.user_id == bindparam("user"), events.c.retracted_at.is_(None)]
    if head:
        mine = st.user_id == bindparam("user")
        floor_at = select(func.coalesce(func.max(st.floor_at), 0)).where(mine).scalar_subquery()
        floor_id = select(func.coalesce(func.max(st.floor_id), 0)).where(mine).scalar_subquery()
        columns += [floor_at.label("floor_at"), floor_id.label("floor_id")]
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
WITH fl AS (SELECT coalesce(max(floor_at), 0) AS fat, coalesce(max(floor_id), 0) AS fid
            FROM timeline_state WHERE user_id = :user)
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


def bounds(user: str, before: Position | None, after: Position | None) -> dict[str, Any]:
    return {"user": user, **params("before", before), **params("after", after)}
