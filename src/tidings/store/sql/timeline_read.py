"""A timeline read's statements on SQL, each built once per shape and run straight on the
driver (:meth:`Database.fetch`, prepared by psycopg): the mailbox page, its floor, and on
PostgreSQL the whole first step of a read in one statement (:func:`pg_head`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import BigInteger, bindparam, func, select, text

from tidings.store.sql.schema import events, timeline_state, timelines

t = timelines.c
st = timeline_state.c

FLOOR = select(st.floor_id).where(st.user_id == bindparam("user"))


@lru_cache(maxsize=64)
def page(head: bool, before: bool, after: bool, limit: int) -> Any:
    """A mailbox page: ``:user``, ``:before`` / ``:after``; with ``head``, strictly above the
    mailbox's floor too, which rides along as a seventh column."""
    columns: list[Any] = [events.c.id, events.c.type, events.c.actor, events.c.object,
                          events.c.payload, events.c.created_at]
    where = [t.user_id == bindparam("user"), events.c.retracted_at.is_(None)]
    if head:
        floor = (select(func.coalesce(func.max(st.floor_id), 0))
                 .where(st.user_id == bindparam("user")).scalar_subquery())
        columns.append(floor.label("floor"))
        where.append(t.event_id > floor)
    if before:
        where.append(t.event_id < bindparam("before", type_=BigInteger))
    if after:
        where.append(t.event_id > bindparam("after", type_=BigInteger))
    return (select(*columns).join(timelines, t.event_id == events.c.id).where(*where)
            .order_by(t.event_id.desc()).limit(limit))


@lru_cache(maxsize=64)
def pg_head(before: bool, after: bool, limit: int) -> Any:
    """PostgreSQL: :func:`page` with ``head``, plus one last row (its id NULL) carrying the
    floor even when the page is empty and, as JSON text, the reader's followees with their
    stored source state in the payload column (what ``GraphStore.followee_sources`` reads:
    ``[[followee, followers, model, push_from, actor], …]``) and the reader's mutes in the
    object column (``GraphStore.mutes``: ``[[kind, value], …]``)."""
    bounds = (" AND t.event_id < :before" if before else "") + (
        " AND t.event_id > :after" if after else "")
    return text(f"""
WITH fl AS (SELECT coalesce(max(floor_id), 0) AS floor FROM timeline_state
            WHERE user_id = :user)
SELECT * FROM (
  (SELECT e.id, e.type, e.actor, e.object, e.payload, e.created_at, (SELECT floor FROM fl)
   FROM timelines t JOIN events e ON e.id = t.event_id
   WHERE t.user_id = :user AND e.retracted_at IS NULL
     AND t.event_id > (SELECT floor FROM fl){bounds}
   ORDER BY t.event_id DESC LIMIT {int(limit)})
  UNION ALL
  SELECT NULL, NULL, NULL,
    (SELECT coalesce(json_agg(json_build_array(m.kind, m.value) ORDER BY m.kind, m.value),
                     '[]')::text
     FROM mutes m WHERE m.user_id = :user),
    (SELECT coalesce(json_agg(json_build_array(f.followee, s.followers, s.model,
                                               s.push_from, s.actor)), '[]')::text
     FROM follows f LEFT JOIN timeline_sources s ON s.actor = f.followee
     WHERE f.follower = :user),
    NULL, (SELECT floor FROM fl)
) AS head ORDER BY id DESC NULLS LAST""").bindparams(
        *([bindparam("before", type_=BigInteger)] if before else []),
        *([bindparam("after", type_=BigInteger)] if after else []))


def bounds(user: str, before: int | None, after: int | None) -> dict[str, Any]:
    params: dict[str, Any] = {"user": user}
    if before is not None:
        params["before"] = before
    if after is not None:
        params["after"] = after
    return params
