"""Who hears of what: users, subscriptions, follows and mutes, and audience queries by chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, Select, and_, delete, or_, select

from tidings.store.sql.database import Database
from tidings.store.sql.schema import follows, mutes, subscriptions, users

SOURCES = ("recipients", "object_subscribers", "actor_followers")


@dataclass(frozen=True)
class Subscription:
    id: int
    user: str
    type: str
    object: str
    channels: tuple[str, ...]
    created_at: int


def subscription_from_row(row: object) -> Subscription:
    return Subscription(
        id=row.id, user=row.user_id, type=row.type, object=row.object,  # type: ignore[attr-defined]
        channels=tuple(c for c in row.channels.split(",") if c),  # type: ignore[attr-defined]
        created_at=row.created_at,  # type: ignore[attr-defined]
    )


def add_user(db: Database, conn: Connection, user: str, now: int) -> bool:
    """Register a user; True if new."""
    result = conn.execute(db.insert_ignore(users).values(user_id=user, created_at=now))
    return result.rowcount == 1


def subscriber_query(event_type: str, obj: str | None) -> Select[tuple[str]]:
    objects = ["*"] if obj is None else [obj, "*"]
    return (
        select(subscriptions.c.user_id)
        .where(subscriptions.c.type.in_([event_type, "*"]), subscriptions.c.object.in_(objects))
        .distinct()
    )


def follower_query(actor: str) -> Select[tuple[str]]:
    return select(follows.c.follower.label("user_id")).where(follows.c.followee == actor)


def source_query(source: str, event_type: str, actor: str | None,
                 obj: str | None) -> Select[tuple[str]] | None:
    """The users one audience source names, as a query over a column called ``user_id``."""
    if source == "object_subscribers":
        return subscriber_query(event_type, obj)
    if source == "actor_followers" and actor is not None:
        return follower_query(actor)
    return None


def _user_column(query: Select[tuple[str]]) -> ColumnElement[str]:
    return query.selected_columns[0]


def users_in_range(conn: Connection, query: Select[tuple[str]], after: str,
                   upto: str | None, limit: int | None = None) -> list[str]:
    """User ids of a source in (after, upto], ascending."""
    column = _user_column(query)
    ranged = query.where(column > after)
    if upto is not None:
        ranged = ranged.where(column <= upto)
    ranged = ranged.order_by(column)
    if limit is not None:
        ranged = ranged.limit(limit)
    return [str(r[0]) for r in conn.execute(ranged)]


def nth_user_after(conn: Connection, query: Select[tuple[str]], after: str,
                   n: int) -> str | None:
    """The n-th user id after ``after`` (a chunk boundary), or None if fewer remain."""
    column = _user_column(query)
    row = conn.execute(
        query.where(column > after).order_by(column).limit(1).offset(n - 1)
    ).first()
    return str(row[0]) if row is not None else None


def muting_users(conn: Connection, candidates: Sequence[str], actor: str | None,
                 obj: str | None) -> set[str]:
    """Those of ``candidates`` who muted this actor or object."""
    conditions = []
    if actor is not None:
        conditions.append(and_(mutes.c.kind == "actor", mutes.c.value == actor))
    if obj is not None:
        conditions.append(and_(mutes.c.kind == "object", mutes.c.value == obj))
    if not conditions or not candidates:
        return set()
    found: set[str] = set()
    for start in range(0, len(candidates), 5000):
        part = list(candidates[start:start + 5000])
        rows = conn.execute(
            select(mutes.c.user_id).where(mutes.c.user_id.in_(part), or_(*conditions)).distinct()
        )
        found.update(r[0] for r in rows)
    return found


def delete_mute(conn: Connection, user: str, kind: str, value: str) -> int:
    result = conn.execute(delete(mutes).where(
        mutes.c.user_id == user, mutes.c.kind == kind, mutes.c.value == value))
    return result.rowcount
