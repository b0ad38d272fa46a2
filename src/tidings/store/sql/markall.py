"""Mark all read on PostgreSQL in one statement, committed on its own: the capped count of
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
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import BigInteger, Connection, bindparam, text

from tidings.store.sql import readmarkers
from tidings.store.sql.database import Database
from tidings.store.sql.readmarkers import PG_ALL, PG_COUNTED, PG_MARKS

# the count (readmarkers.PG_COUNTED, under the "all" watermark), the upsert where no narrower
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
    unit of work (``readmarkers.count_statement``, the "all" watermark's upsert) in one
    transaction on the driver of ``read``'s connection, built once and run straight on the
    driver; None (nothing done) where a narrower watermark makes the count inexact. The
    caller announces the move once this returns."""
    count = readmarkers.count_statement(db.backend, False, False, False)
    with read() as conn:
        db.run(conn, BEGIN[db.backend], {})
        driver: Any = conn.connection.dbapi_connection
        committed = False
        try:
            ((unread, narrower),) = db.fetch(conn, count, {"user": user})
            if narrower:
                return None
            db.run(conn, readmarkers.move_statement(db.backend),
                   {"user_id": user, "scope": "all", "until_at": now})
            driver.commit()
            committed = True
        finally:
            if not committed:  # failed, or nothing to do: end it with nothing written
                with contextlib.suppress(Exception):
                    driver.rollback()
    return int(unread)
