"""The statements that read an audience source (``GraphStore.audience``, ``nth_after``,
``followers_of``, ``subscription_channels``): who an event's sources name, by ranges of user
ids, with expired subscriptions left out."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Select, TextClause, or_, select, text, union_all

from tidings.domain.audience import ACTOR_FOLLOWERS, OBJECT_SUBSCRIBERS, AudienceSource
from tidings.store.sql.schema import follows, subscriptions


def live(at: int) -> ColumnElement[bool]:
    """Subscriptions that have not expired at ``at``."""
    return or_(subscriptions.c.expires_at.is_(None), subscriptions.c.expires_at > at)


def source_query(source: AudienceSource) -> Select[tuple[str]] | None:
    """The users one audience source names, as a query over one user id column."""
    if source.kind == OBJECT_SUBSCRIBERS:
        objects = ["*"] if source.object is None else [source.object, "*"]
        query = (select(subscriptions.c.user_id)
                 .where(subscriptions.c.type.in_([source.type, "*"]),
                        subscriptions.c.object.in_(objects))
                 .distinct())
        return query if source.at is None else query.where(live(source.at))
    if source.kind == ACTOR_FOLLOWERS and source.actor is not None:
        return select(follows.c.follower.label("user_id")).where(
            follows.c.followee == source.actor)
    return None


def ranged(source: AudienceSource, backend: str, after: str, upto: str | None,
           limit: int | None, offset: int = 0) -> Select[tuple[str]] | None:
    """The source's users above ``after`` (and up to ``upto``), in id order, ``limit`` of
    them from the ``offset``-th. On PostgreSQL an object's subscribers are one ordered range
    of the (type, object, user) index per (type, object) pair the source matches, merged:
    a prepared statement's generic plan otherwise walked the whole (user, type, object) index
    in user order, filtering every subscription (O(table) per chunk)."""
    query = source_query(source)
    if query is None:
        return None
    column: ColumnElement[Any]
    if backend == "postgresql" and source.kind == OBJECT_SUBSCRIBERS:
        c = subscriptions.c
        objects = ["*"] if source.object is None else [source.object, "*"]
        parts = []
        for kind in (source.type, "*"):
            for obj in objects:
                part = select(c.user_id).where(c.type == kind, c.object == obj, c.user_id > after)
                if source.at is not None:
                    part = part.where(live(source.at))
                if upto is not None:
                    part = part.where(c.user_id <= upto)
                part = part.order_by(c.user_id)
                parts.append(part.limit(limit + offset) if limit is not None else part)
        merged = union_all(*parts).subquery("s")
        query = select(merged.c.user_id).distinct()
        column = merged.c.user_id
    else:
        column = query.selected_columns[0]
        query = query.where(column > after)
        if upto is not None:
            query = query.where(column <= upto)
    query = query.order_by(column)
    if limit is not None:
        query = query.limit(limit)
    return query.offset(offset) if offset else query


# the first followers of each of many actors: one index range per actor (PostgreSQL)
PG_FOLLOWERS = text("""
SELECT a.actor, f.follower FROM unnest(CAST(:actors AS VARCHAR[])) AS a(actor)
CROSS JOIN LATERAL (SELECT follower FROM follows WHERE followee = a.actor
                    ORDER BY follower LIMIT :n) AS f
""")
ACTORS_PER_UNION = 100


@lru_cache(maxsize=128)
def followers_union(actors: int, aggregated: bool = False) -> TextClause:
    """The first ``:n`` followers of each of ``:a0``… (``actors`` of them) without LATERAL
    (SQLite, MariaDB): a ``UNION ALL`` of one index range per actor, its text built once per
    number of actors (SQLAlchemy built and compiled a select of 100 subqueries on every
    call: about 75 ms of a claim's fan-out on SQLite). ``aggregated`` (MariaDB): one row an
    actor, its followers as a JSON array."""
    picked = "JSON_ARRAYAGG(follower)" if aggregated else "follower"
    grouped = " GROUP BY followee" if aggregated else ""
    part = (f"SELECT followee, {picked} FROM (SELECT followee, follower FROM follows"
            f" WHERE followee = :a{{i}} ORDER BY follower LIMIT :n) AS p{{i}}{grouped}")
    return text(" UNION ALL ".join(part.format(i=i) for i in range(actors)))
