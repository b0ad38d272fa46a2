"""Mark all read on PostgreSQL in one statement, committed on its own: the capped count of
what it covers (under the "all" watermark, before the move), the upsert of the "all"
watermark, and the announcement to live listeners (``pg_notify``, delivered at commit), where
a unit of work takes BEGIN, the count, the upsert, COMMIT and then the announcement.

The statement moves nothing when a narrower watermark (per type, category or section) lies
beyond "all": the count it returns would not be exact, so the caller does the work as a unit.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache
from typing import Any

from sqlalchemy import Connection, bindparam, func, literal, select
from sqlalchemy.dialects import postgresql as pg_dialect

from tidings.store.sql.database import Database
from tidings.store.sql.readmarkers import unread_count_statement
from tidings.store.sql.schema import read_markers

m = read_markers.c


@cache
def _statement(channel: str) -> Any:
    counted = unread_count_statement(False, False, False).cte("counted")
    values = select(bindparam("user", type_=read_markers.c.user_id.type), literal("all"),
                    bindparam("now", type_=read_markers.c.until_at.type)
                    ).where(counted.c.narrower == 0)
    upsert = pg_dialect.insert(read_markers).from_select(["user_id", "scope", "until_at"],
                                                          values)
    moved = upsert.on_conflict_do_update(
        index_elements=["user_id", "scope"],
        set_={"until_at": func.greatest(m.until_at, upsert.excluded.until_at)},
    ).returning(m.user_id).cte("moved")
    told = select(func.pg_notify(literal(channel), moved.c.user_id).label("told")).cte(
        "told").prefix_with("MATERIALIZED", dialect="postgresql")
    announced = select(func.count()).select_from(told).scalar_subquery()
    return select(counted.c.unread, counted.c.narrower, announced.label("announced"))


def mark_all_read(db: Database, read: Callable[[], AbstractContextManager[Connection]],
                  user: str, now: int, channel: str) -> int | None:
    """The unread count the "all" watermark's move to ``now`` covered, or None (nothing
    done) when a narrower watermark makes the count inexact. ``read`` gives an autocommit
    connection (:meth:`Database.read`, or a held one)."""
    with read() as conn:  # autocommit: one statement, committed when it returns
        ((unread, narrower, _announced),) = db.fetch(conn, _statement(channel),
                                                     {"user": user, "now": now})
    return None if narrower else int(unread)
