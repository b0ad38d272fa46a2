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

from sqlalchemy import BigInteger, Connection, bindparam, text

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
