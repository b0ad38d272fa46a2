"""W3's baselines: the minimal statements that write an event's inbox rows, from
``../shared/bench-anchors/raw_postgresql.py``, on tidings' own tables.

* ``INSERT … SELECT`` — the anchor's "server-side bulk fan-out": one statement copies the
  followers out of ``follows`` into ``notifications``, in the server;
* ``COPY`` — the anchor's fastest client-side write: the followers are read, and their rows
  streamed back with ``COPY … FROM STDIN`` (``executemany`` on SQLite and MariaDB);
* the push statement — the seed's "PUSH submit: msg + fan-out in 1 stmt, commit each": the
  event row and its followers' rows written by one ``WITH m AS (INSERT … RETURNING)
  INSERT … SELECT`` statement (two statements in one transaction on SQLite and MariaDB, which
  have no data-modifying CTE), committed per event.

Each job is one transaction, committed before the clock stops, with the same column values
tidings writes for :data:`EVENT_TYPE` (not bundled, so each row is its own group).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tidings.domain.bundling import bundle_hash, display_hash
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.store.sql.core.hashes import to_sql
from tidings_benchmarks.raw import RawConnection

ANCHOR = "bench-anchors/raw_postgresql.py"
EVENT_TYPE = EventType("bench.post", category="bench", audience=("actor_followers",))
OBJECT = "bench:post"
ROW_COLUMNS = ("user_id", "event_id", "created_at", "fresh_at", "type_id", "actor", "object",
               "bundle_hash", "display_hash", "bundle_base")
_ROWS = ", ".join(ROW_COLUMNS)
EVENT_SQL = ("INSERT INTO events (type, actor, object, payload, recipients, exclude, body_hash, "
             "created_at) VALUES (%s, %s, %s, '{}', '[]', '[]', %s, %s)")
INSERT_SELECT_SQL = (f"INSERT INTO notifications ({_ROWS}) SELECT follower, %s, %s, %s, %s, %s, "
                     "%s, %s, %s, TRUE FROM follows WHERE followee = %s")
PUSH_SQL = (f"WITH m AS ({EVENT_SQL} RETURNING id, actor, created_at) "
            f"INSERT INTO notifications ({_ROWS}) SELECT f.follower, m.id, m.created_at, "
            "m.created_at, %s, m.actor, %s, h.h, h.h, TRUE "
            "FROM m CROSS JOIN LATERAL (SELECT ('x' || left(md5(m.id::text), 16))::bit(64)"
            "::bigint AS h) h JOIN follows f ON f.followee = m.actor")
FOLLOWERS_SQL = "SELECT follower FROM follows WHERE followee = %s"

STATEMENTS = {
    "INSERT…SELECT": (f"{EVENT_SQL}; {INSERT_SELECT_SQL}; COMMIT",
                      f"{ANCHOR}: server-side bulk fan-out INSERT..SELECT"),
    "COPY": (f"{EVENT_SQL}; {FOLLOWERS_SQL}; COPY notifications ({_ROWS}) FROM STDIN; COMMIT "
             "(executemany without COPY)", f"{ANCHOR}: COPY FROM STDIN (write_row)"),
    "push": (f"{PUSH_SQL}; COMMIT (SQLite, MariaDB: the two statements in one transaction)",
             f"{ANCHOR}: PUSH submit: msg + fan-out in 1 stmt, commit each"),
}


def write_follows(url: str, pairs: Iterable[tuple[str, str]]) -> int:
    """Insert (follower, followee) pairs as fast as the backend takes them; return the count."""
    with RawConnection(url, autocommit=False) as raw:
        count = raw.write_rows("follows", ("follower", "followee", "created_at"),
                               ((a, b, 0) for a, b in pairs))
        raw.commit()
    return count


class RawFanout:
    """One event's fan-out by the raw statements, on one connection (a transaction a job)."""

    def __init__(self, url: str) -> None:
        self.conn = RawConnection(url, autocommit=False)
        sql = self.conn.sql
        self._event, self._insert_select = sql(EVENT_SQL), sql(INSERT_SELECT_SQL)
        self._followers, self._push = sql(FOLLOWERS_SQL), sql(PUSH_SQL)
        self._body = Event(EVENT_TYPE.name, object=OBJECT).body_hash()
        # the rows name the type by its id in tidings' types dictionary
        self._type_id = self.conn.type_id(EVENT_TYPE.name, EVENT_TYPE.category,
                                          EVENT_TYPE.section)
        self.conn.commit()

    def _new_event(self, actor: str, now: int) -> tuple[int, str]:
        event_id = self.conn.insert_id(self._event, (EVENT_TYPE.name, actor, OBJECT, self._body,
                                                     now))
        bhash = bundle_hash(EVENT_TYPE.bundle, EVENT_TYPE.name, actor, OBJECT, event_id)
        return event_id, bhash

    def _values(self, event_id: int, now: int, actor: str, bhash: str) -> tuple[object, ...]:
        return (event_id, now, now, self._type_id, actor, OBJECT, to_sql(bhash),
                to_sql(display_hash(bhash, event_id)))

    def insert_select(self, actor: str, now: int) -> int:
        """Deliver a new event of ``actor`` to all its followers in the server; rows written."""
        event_id, bhash = self._new_event(actor, now)
        written = self.conn.execute(self._insert_select,
                                    (*self._values(event_id, now, actor, bhash), actor))
        self.conn.commit()
        return written

    def copy(self, actor: str, now: int) -> int:
        """The same, the followers read by the client and their rows sent back in bulk."""
        event_id, bhash = self._new_event(actor, now)
        values = self._values(event_id, now, actor, bhash)
        followers: Sequence[tuple[object, ...]] = self.conn.fetch(self._followers, (actor,))
        written = self.conn.write_rows("notifications", ROW_COLUMNS,
                                       ((f[0], *values, True) for f in followers), batch=5000)
        self.conn.commit()
        return written

    def push(self, actor: str, now: int) -> int:
        """The seed's push: one event and its followers' rows, committed; rows written."""
        if self.conn.backend == "postgresql":
            written = self.conn.execute(self._push, (
                EVENT_TYPE.name, actor, OBJECT, self._body, now, self._type_id, OBJECT))
            self.conn.commit()
            return written
        return self.insert_select(actor, now)

    def close(self) -> None:
        self.conn.close()

